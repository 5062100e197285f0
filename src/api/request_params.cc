#include "src/api/request_params.h"

#include "emulator/env/time_text.h"
#include "emulator/env/uuid.h"

namespace sheetlog::api {

int64_t QueryInt(const Call& call, const std::string& name, int64_t min, int64_t max,
                 int64_t fallback) {
  std::optional<std::string> text = call.Query(name);
  if (!text) return fallback;
  std::optional<int64_t> value = ParseInt(*text);
  if (!value || *value < min || *value > max) {
    throw ApiError::Validation("query parameter '" + name + "' must be an integer in " +
                               std::to_string(min) + ".." + std::to_string(max) +
                               ", got '" + *text + "'");
  }
  return *value;
}

int QueryLimit(const Call& call, int fallback, int max) {
  return static_cast<int>(QueryInt(call, "limit", 1, max, fallback));
}

int64_t ParseSeq(const std::string& name, const std::string& text) {
  std::optional<int64_t> value = ParseInt(text);
  if (!value) {
    throw ApiError::Validation("query parameter '" + name +
                               "' must be an integer, got '" + text + "'");
  }
  if (*value < 0 || *value > kMaxSeq) {
    throw ApiError::Range("query parameter '" + name + "' is out of range: " + text);
  }
  return *value;
}

std::optional<int64_t> QuerySeq(const Call& call, const std::string& name) {
  std::optional<std::string> text = call.Query(name);
  if (!text) return std::nullopt;
  return ParseSeq(name, *text);
}

int64_t QueryTime(const Call& call, const std::string& name, int64_t fallback) {
  std::optional<std::string> text = call.Query(name);
  if (!text) return fallback;
  std::optional<int64_t> seconds = ParseTimePoint(*text);
  if (!seconds) {
    throw ApiError::Validation("query parameter '" + name +
                               "' must be unix seconds or ISO-8601 UTC "
                               "(2026-01-01T00:00:00Z), got '" +
                               *text + "'");
  }
  return *seconds;
}

std::string CheckedSheetId(const std::string& id) {
  if (!IsUuid(id)) {
    throw ApiError::NotFound("no sheet '" + id + "' (sheet ids are UUIDs)");
  }
  return id;
}

std::string SheetId(const Call& call) { return CheckedSheetId(call.Path(1)); }

}  // namespace sheetlog::api
