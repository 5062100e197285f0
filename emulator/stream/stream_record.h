// A change feed record: one committed INSERT, UPDATE or DELETE of a row of a table that
// has a stream (DynamoDB Streams' NEW_AND_OLD_IMAGES view).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sheetlog {

enum class StreamEventName { kInsert, kModify, kRemove };

// "INSERT", "MODIFY", "REMOVE" (DynamoDB's eventName).
std::string_view StreamEventNameText(StreamEventName name);
// Inverse of StreamEventNameText; nullopt for anything else.
std::optional<StreamEventName> ParseStreamEventName(std::string_view text);

struct StreamRecord {
  std::string stream;  // source table
  int shard = 0;
  // Increasing by one per record within (stream, shard), in commit order.
  int64_t sequence = 0;
  StreamEventName event_name = StreamEventName::kInsert;
  // JSON objects, column name -> value. A NULL column is absent from an image (as an
  // attribute that is not present on DynamoDB); BLOB values appear as upper-case hex.
  nlohmann::json keys = nlohmann::json::object();
  nlohmann::json new_image;    // null (not an object) for REMOVE
  nlohmann::json old_image;    // null (not an object) for INSERT
  int64_t created_micros = 0;  // clock time of the change

  // "<stream>/<shard>/<sequence>", for logs and error messages.
  std::string DebugId() const;
};

}  // namespace sheetlog
