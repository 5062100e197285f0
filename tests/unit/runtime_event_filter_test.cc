#include <gtest/gtest.h>

#include "emulator/runtime/event_filter.h"

namespace sheetlog {
namespace {

StreamRecord Insert(nlohmann::json image) {
  StreamRecord r;
  r.event_name = StreamEventName::kInsert;
  r.keys = {{"sheet_id", "s"}, {"segment", 0}, {"num", 1}};
  r.new_image = std::move(image);
  return r;
}

TEST(EventFilterTest, EmptyFilterMatchesEverything) {
  EXPECT_TRUE(EventFilter{}.Matches(Insert({{"type", "SetCell"}})));
}

TEST(EventFilterTest, EqualsMatchesAnyOfItsValues) {
  EventFilter f{
      {FilterPattern{{}, {AttributeTest::Equals("type", {"Snapshot", "EndSegment"})}}}};
  EXPECT_TRUE(f.Matches(Insert({{"type", "Snapshot"}})));
  EXPECT_TRUE(f.Matches(Insert({{"type", "EndSegment"}})));
  EXPECT_FALSE(f.Matches(Insert({{"type", "SetCell"}})));
  EXPECT_FALSE(f.Matches(Insert({{"body", "x"}})));  // absent attribute
  EventFilter number{{FilterPattern{{}, {AttributeTest::Equals("version", {2})}}}};
  EXPECT_TRUE(number.Matches(Insert({{"version", 2}})));
  EXPECT_TRUE(number.Matches(Insert({{"version", 2.0}})));
  EXPECT_FALSE(number.Matches(Insert({{"version", "2"}})));
}

TEST(EventFilterTest, ExistsAndNotExists) {
  EventFilter exists{{FilterPattern{{}, {AttributeTest::Exists("external")}}}};
  EventFilter absent{{FilterPattern{{}, {AttributeTest::NotExists("external")}}}};
  StreamRecord with = Insert({{"external", "blob/1"}});
  StreamRecord without = Insert({{"type", "SetCell"}});
  StreamRecord null_value = Insert({{"external", nullptr}});
  EXPECT_TRUE(exists.Matches(with));
  EXPECT_FALSE(exists.Matches(without));
  EXPECT_FALSE(exists.Matches(null_value));
  EXPECT_FALSE(absent.Matches(with));
  EXPECT_TRUE(absent.Matches(without));
  // A REMOVE has no new image: nothing exists in it.
  StreamRecord removed;
  removed.event_name = StreamEventName::kRemove;
  removed.old_image = {{"external", "blob/1"}};
  EXPECT_TRUE(absent.Matches(removed));
  EventFilter old_exists{{FilterPattern{
      {}, {AttributeTest::Exists("external", AttributeTest::Image::kOldImage)}}}};
  EXPECT_TRUE(old_exists.Matches(removed));
}

TEST(EventFilterTest, PatternsAreOredTestsAndEventNamesAreAnded) {
  EventFilter f{{
      FilterPattern{{StreamEventName::kInsert},
                    {AttributeTest::Equals("type", {"Snapshot"})}},
      FilterPattern{
          {StreamEventName::kInsert, StreamEventName::kModify},
          {AttributeTest::Exists("external"), AttributeTest::Prefix("type", {"Set"})}},
  }};
  EXPECT_TRUE(f.Matches(Insert({{"type", "Snapshot"}})));
  EXPECT_TRUE(f.Matches(Insert({{"type", "SetCell"}, {"external", "k"}})));
  EXPECT_FALSE(f.Matches(Insert({{"type", "SetCell"}})));                   // no external
  EXPECT_FALSE(f.Matches(Insert({{"type", "Merge"}, {"external", "k"}})));  // prefix
  StreamRecord modified = Insert({{"type", "Snapshot"}});
  modified.event_name = StreamEventName::kModify;
  EXPECT_FALSE(f.Matches(modified)) << "first pattern wants INSERT only";
  modified.new_image["external"] = "k";
  modified.new_image["type"] = "SetRow";
  EXPECT_TRUE(f.Matches(modified));
}

TEST(EventFilterTest, KeysCanBeTested) {
  EventFilter f{{FilterPattern{
      {}, {AttributeTest::Equals("segment", {0}, AttributeTest::Image::kKeys)}}}};
  EXPECT_TRUE(f.Matches(Insert({})));
  StreamRecord other = Insert({});
  other.keys["segment"] = 3;
  EXPECT_FALSE(f.Matches(other));
}

}  // namespace
}  // namespace sheetlog
