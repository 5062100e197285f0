#include "emulator/runtime/event_filter.h"

#include <algorithm>

namespace sheetlog {

namespace {

const nlohmann::json* Find(const StreamRecord& record, const AttributeTest& test) {
  const nlohmann::json* image = nullptr;
  switch (test.image) {
    case AttributeTest::Image::kNewImage:
      image = &record.new_image;
      break;
    case AttributeTest::Image::kOldImage:
      image = &record.old_image;
      break;
    case AttributeTest::Image::kKeys:
      image = &record.keys;
      break;
  }
  if (!image->is_object()) return nullptr;
  auto it = image->find(test.attribute);
  if (it == image->end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace

AttributeTest AttributeTest::Equals(std::string attribute,
                                    std::vector<nlohmann::json> values, Image image) {
  return {image, std::move(attribute), Op::kEquals, std::move(values)};
}

AttributeTest AttributeTest::Prefix(std::string attribute,
                                    std::vector<std::string> prefixes, Image image) {
  std::vector<nlohmann::json> values(prefixes.begin(), prefixes.end());
  return {image, std::move(attribute), Op::kPrefix, std::move(values)};
}

AttributeTest AttributeTest::Exists(std::string attribute, Image image) {
  return {image, std::move(attribute), Op::kExists, {}};
}

AttributeTest AttributeTest::NotExists(std::string attribute, Image image) {
  return {image, std::move(attribute), Op::kNotExists, {}};
}

bool AttributeTest::Matches(const StreamRecord& record) const {
  const nlohmann::json* value = Find(record, *this);
  switch (op) {
    case Op::kExists:
      return value != nullptr;
    case Op::kNotExists:
      return value == nullptr;
    case Op::kEquals:
      return value != nullptr &&
             std::any_of(values.begin(), values.end(),
                         [&](const nlohmann::json& v) { return *value == v; });
    case Op::kPrefix:
      if (value == nullptr || !value->is_string()) return false;
      return std::any_of(values.begin(), values.end(), [&](const nlohmann::json& v) {
        return v.is_string() && value->get_ref<const std::string&>().starts_with(
                                    v.get_ref<const std::string&>());
      });
  }
  return false;
}

bool FilterPattern::Matches(const StreamRecord& record) const {
  if (!event_names.empty() && std::find(event_names.begin(), event_names.end(),
                                        record.event_name) == event_names.end()) {
    return false;
  }
  return std::all_of(tests.begin(), tests.end(),
                     [&](const AttributeTest& t) { return t.Matches(record); });
}

bool EventFilter::Matches(const StreamRecord& record) const {
  if (patterns.empty()) return true;
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const FilterPattern& p) { return p.Matches(record); });
}

}  // namespace sheetlog
