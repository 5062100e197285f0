// UUIDs: random (version 4) and name-based (version 5, RFC 4122: SHA-1 over namespace +
// name), the "hash UUIDs" seed 000 uses for deterministic snapshot object keys.
#pragma once

#include <string>
#include <string_view>

namespace sheetlog {

// A random version-4 UUID, lower-case canonical text.
std::string NewRandomUuid();
// The version-5 UUID of `name` in `namespace_uuid` (canonical text). Returns an empty
// string if namespace_uuid is not a valid UUID.
std::string NameUuid(std::string_view namespace_uuid, std::string_view name);
// True if `text` is a canonical UUID (8-4-4-4-12 hex digits).
bool IsUuid(std::string_view text);

}  // namespace sheetlog
