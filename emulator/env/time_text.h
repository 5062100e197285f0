// Points in time written as text by people and clients (the admin routes' `since` and
// `until`, the CLI's --since).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sheetlog {

// Unix seconds from "1767225600", "2026-01-01", "2026-01-01T00:00:00Z" (or with
// "+00:00"); only UTC is accepted, so a time means the same on every machine. nullopt
// for anything else.
std::optional<int64_t> ParseTimePoint(const std::string& text);

}  // namespace sheetlog
