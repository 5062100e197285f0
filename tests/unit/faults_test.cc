// FaultInjector (emulator/env/faults.h) and the list of points (fault_points.h).
#include "emulator/env/faults.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "emulator/env/fault_points.h"

namespace sheetlog {
namespace {

TEST(FaultPointsTest, EveryNameIsUniqueAndFindsItsPoint) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < kFaultPointCount; ++i) {
    const FaultPointInfo& info = kFaultPoints[i];
    EXPECT_EQ(static_cast<size_t>(info.point), i);
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_FALSE(info.meaning.empty()) << info.name;
    EXPECT_EQ(FaultPointName(info.point), info.name);
    EXPECT_EQ(FindFaultPoint(info.name), info.point);
  }
  EXPECT_EQ(FindFaultPoint("snapshot.before_compete"), std::nullopt);
  EXPECT_EQ(FindFaultPoint(""), std::nullopt);
}

TEST(FaultInjectorTest, ArmingAnUnknownNameIsRefusedAndArmsNothing) {
  FaultInjector faults;
  const Status armed = faults.Arm("snapshot.before_compete", FaultSpec{});
  EXPECT_EQ(armed.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(armed.message().find("unknown fault point 'snapshot.before_compete'"),
            std::string::npos)
      << armed.message();
  EXPECT_NE(armed.message().find("snapshot.before_complete"), std::string::npos)
      << "the refusal lists the known points";
  EXPECT_TRUE(faults.Armed().empty());
  EXPECT_EQ(faults.Disarm("no.such.point").code(), StatusCode::kInvalidArgument);
}

TEST(FaultInjectorTest, AnArmedPointFiresItsCountThenStops) {
  FaultInjector faults;
  EXPECT_TRUE(faults.Hit(FaultPoint::kQueueSend).ok());
  ASSERT_TRUE(faults.Arm("queue.send", FaultSpec{FaultKind::kError, 2}).ok());
  const Status first = faults.Hit(FaultPoint::kQueueSend);
  EXPECT_EQ(first.code(), StatusCode::kUnavailable);
  EXPECT_EQ(first.message(), "fault injected at queue.send");
  EXPECT_TRUE(faults.Hit(FaultPoint::kQueueDelete).ok()) << "another point is unarmed";
  EXPECT_FALSE(faults.Hit(FaultPoint::kQueueSend).ok());
  EXPECT_TRUE(faults.Hit(FaultPoint::kQueueSend).ok()) << "count spent";
  EXPECT_EQ(faults.FiredCount(FaultPoint::kQueueSend), 2);
  ASSERT_EQ(faults.Armed().size(), 1u);
  EXPECT_EQ(faults.Armed()[0].name, "queue.send");
  faults.Disarm(FaultPoint::kQueueSend);
  EXPECT_EQ(faults.FiredCount(FaultPoint::kQueueSend), 0);
  EXPECT_TRUE(faults.Armed().empty());
}

TEST(FaultInjectorTest, DiskFullAndDuplicateKinds) {
  FaultInjector faults;
  faults.Arm(FaultPoint::kBlobPut, FaultSpec{FaultKind::kDiskFull, -1});
  EXPECT_EQ(faults.Hit(FaultPoint::kBlobPut).code(), StatusCode::kInsufficientStorage);
  EXPECT_EQ(faults.Hit(FaultPoint::kBlobPut).code(), StatusCode::kInsufficientStorage);
  faults.Arm(FaultPoint::kQueueReceiveDuplicate, FaultSpec{FaultKind::kDuplicate, 1});
  EXPECT_TRUE(faults.ShouldDuplicate(FaultPoint::kQueueReceiveDuplicate));
  EXPECT_FALSE(faults.ShouldDuplicate(FaultPoint::kQueueReceiveDuplicate));
  faults.DisarmAll();
  EXPECT_TRUE(faults.Hit(FaultPoint::kBlobPut).ok());
  EXPECT_TRUE(faults.Armed().empty());
}

}  // namespace
}  // namespace sheetlog
