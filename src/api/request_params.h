// Internal to src/api: typed readers of a request's query parameters and path captures.
// Each returns the value or throws the api.md error a client gets for it (ValidationError
// or RangeError, naming the parameter), so handlers never parse text themselves.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "src/api/router.h"

namespace sheetlog::api {

// The largest seq (2^53 - 1: exact in a JSON number).
inline constexpr int64_t kMaxSeq = (int64_t{1} << 53) - 1;

// Query parameter `name`: a decimal integer in [min, max], `fallback` when absent.
// ValidationError "query parameter 'name' must be an integer in min..max, got 'text'"
// otherwise (digits with an optional leading '-'; nothing else, no spaces).
int64_t QueryInt(const Call& call, const std::string& name, int64_t min, int64_t max,
                 int64_t fallback);

// Query parameter `limit`, the page size of every list route: 1..max, `fallback` when
// absent.
int QueryLimit(const Call& call, int fallback, int max);

// A seq: a non-negative integer up to kMaxSeq. ValidationError if `text` is not an
// integer, RangeError if it is out of range; `name` says which parameter it was.
int64_t ParseSeq(const std::string& name, const std::string& text);
// Query parameter `name` read as a seq (ParseSeq); nullopt when absent.
std::optional<int64_t> QuerySeq(const Call& call, const std::string& name);

// Query parameter `name`: a time as unix seconds or ISO-8601 UTC
// (2026-01-01T00:00:00Z), in seconds; `fallback` when absent.
int64_t QueryTime(const Call& call, const std::string& name, int64_t fallback);

// `id` as a sheet id: NotFound unless it is a UUID (then the log decides).
std::string CheckedSheetId(const std::string& id);
// The sheet id of the route's first capture, checked as above.
std::string SheetId(const Call& call);

}  // namespace sheetlog::api
