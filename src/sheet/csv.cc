#include "src/sheet/csv.h"

namespace sheetlog {

void AppendCsvField(const CellValue& value, std::string* out) {
  if (value.is_null()) return;
  if (value.is_boolean()) {
    out->append(value.boolean() ? "TRUE" : "FALSE");
    return;
  }
  if (value.is_number()) {
    out->append(value.ToJson().dump());
    return;
  }
  const std::string& text = value.string();
  const bool quote = text.find_first_of(",\"\r\n") != std::string::npos ||
                     (!text.empty() && (text.front() == ' ' || text.back() == ' '));
  if (!quote) {
    out->append(text);
    return;
  }
  out->push_back('"');
  for (char c : text) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

void AppendCsvRecord(const std::vector<CellValue>& values, std::string* out) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendCsvField(values[i], out);
  }
  out->append("\r\n");
}

}  // namespace sheetlog
