#include "emulator/stream/stream_record.h"

namespace sheetlog {

std::string_view StreamEventNameText(StreamEventName name) {
  switch (name) {
    case StreamEventName::kInsert:
      return "INSERT";
    case StreamEventName::kModify:
      return "MODIFY";
    case StreamEventName::kRemove:
      return "REMOVE";
  }
  return "INSERT";
}

std::optional<StreamEventName> ParseStreamEventName(std::string_view text) {
  if (text == "INSERT") return StreamEventName::kInsert;
  if (text == "MODIFY") return StreamEventName::kModify;
  if (text == "REMOVE") return StreamEventName::kRemove;
  return std::nullopt;
}

std::string StreamRecord::DebugId() const {
  return stream + "/" + std::to_string(shard) + "/" + std::to_string(sequence);
}

}  // namespace sheetlog
