// Event filtering for stream event source mappings, after Lambda's filter criteria:
// a filter is a list of patterns, OR'ed; a pattern ANDs an optional set of event names
// and tests on top-level attributes of a record's keys, new image or old image.
//
//   // Snapshot entries, and entries whose body lives in the blob store:
//   EventFilter filter{{
//       FilterPattern{{StreamEventName::kInsert},
//                     {AttributeTest::Equals("type", {"Snapshot"})}},
//       FilterPattern{{StreamEventName::kInsert}, {AttributeTest::Exists("external")}},
//   }};
//
// Records that match no pattern are not delivered; the mapping's checkpoint moves past
// them as if they had been processed (as Lambda drops filtered-out records).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "emulator/stream/stream_record.h"

namespace sheetlog {

struct AttributeTest {
  enum class Op {
    kEquals,     // the attribute equals one of `values` (JSON equality; 1 == 1.0)
    kPrefix,     // the attribute is a string starting with one of `values` (strings)
    kExists,     // the attribute is present (images leave out NULL columns)
    kNotExists,  // the attribute is absent, or the image itself is (e.g. REMOVE's new)
  };
  enum class Image { kNewImage, kOldImage, kKeys };

  Image image = Image::kNewImage;
  std::string attribute;
  Op op = Op::kExists;
  std::vector<nlohmann::json> values;

  static AttributeTest Equals(std::string attribute, std::vector<nlohmann::json> values,
                              Image image = Image::kNewImage);
  static AttributeTest Prefix(std::string attribute, std::vector<std::string> prefixes,
                              Image image = Image::kNewImage);
  static AttributeTest Exists(std::string attribute, Image image = Image::kNewImage);
  static AttributeTest NotExists(std::string attribute, Image image = Image::kNewImage);

  bool Matches(const StreamRecord& record) const;
};

struct FilterPattern {
  std::vector<StreamEventName> event_names;  // empty: any event
  std::vector<AttributeTest> tests;          // all must hold

  bool Matches(const StreamRecord& record) const;
};

struct EventFilter {
  std::vector<FilterPattern> patterns;  // empty: every record matches

  bool Matches(const StreamRecord& record) const;
};

}  // namespace sheetlog
