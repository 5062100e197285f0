// The one translator of SQL parameters. Every statement the emulator runs through a
// Connection (Connection::RunSql: Table's row statements, the services' SQL) writes its
// parameters `?1`, `?2`, ... — one convention for both backends — and each backend
// turns them into its own form as it prepares the statement, once per connection (the
// translated text is what it caches; nothing is translated per call).
#pragma once

#include <string>
#include <string_view>

#include "emulator/status.h"

namespace sheetlog {

enum class SqlDialect;  // table.h

// The largest parameter number (SQLite's default SQLITE_MAX_VARIABLE_NUMBER; PostgreSQL
// takes up to 65535).
inline constexpr int kMaxSqlParam = 32766;

// `sql` with each placeholder `?N` in `dialect`'s form: PostgreSQL's `$N`; SQLite's own
// `?N`, so there the text comes back unchanged (but checked). N is 1..kMaxSqlParam and
// binds the Nth parameter: a number may repeat and come in any order.
//
// Placeholders are found as the server's own lexer would: text is left alone inside
// string literals ('...', '' inside; on PostgreSQL also E'...' with backslash escapes,
// and dollar-quoted $tag$...$tag$ bodies), quoted identifiers ("..."; on SQLite also
// `...` and [...]), `--` comments to the end of the line and /* */ comments (nested on
// PostgreSQL, as it nests them). Unterminated quotes or comments run to the end of the
// text, as they are (the server reports them).
//
// InvalidArgument, naming the offset, for what is not one convention: a `?` not
// followed by a digit (an anonymous placeholder: SQLite would number it by position and
// PostgreSQL has none; so `??`, `? 1` and PostgreSQL's jsonb operators ?, ?| and ?&
// too: write jsonb_exists(), jsonb_exists_any(), jsonb_exists_all()), `?0` or a number
// above kMaxSqlParam, and a raw `$N` (PostgreSQL's own form; a `$` inside an identifier,
// as in a$1, is part of it).
Result<std::string> TranslateSqlParams(std::string_view sql, SqlDialect dialect);

}  // namespace sheetlog
