#include "src/sheet/csv.h"

#include <charconv>
#include <cmath>

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
  if (value.is_error()) {  // its text, as spreadsheets show it (#DIV/0!)
    out->append(value.error());
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

namespace sheetlog {

namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
// Integers up to 2^53 are exact in a double.
constexpr int64_t kMaxExactInteger = int64_t{1} << 53;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

size_t CountDigits(std::string_view text, size_t at) {
  size_t n = 0;
  while (at + n < text.size() && IsDigit(text[at + n])) ++n;
  return n;
}

bool EqualsIgnoringCase(std::string_view text, std::string_view upper) {
  if (text.size() != upper.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (c != upper[i]) return false;
  }
  return true;
}

// -?digits[.digits][e[+-]digits] or -?.digits[...], with no leading zero before more
// digits. Sets *integral when there is neither a point nor an exponent.
bool IsPlainNumber(std::string_view text, bool* integral) {
  size_t i = 0;
  if (i < text.size() && text[i] == '-') ++i;
  const size_t int_digits = CountDigits(text, i);
  if (int_digits > 1 && text[i] == '0') return false;  // "007": an identifier
  i += int_digits;
  size_t frac_digits = 0;
  const bool has_point = i < text.size() && text[i] == '.';
  if (has_point) {
    frac_digits = CountDigits(text, i + 1);
    if (frac_digits == 0) return false;
    i += 1 + frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  const bool has_exponent = i < text.size() && (text[i] == 'e' || text[i] == 'E');
  if (has_exponent) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    const size_t exp_digits = CountDigits(text, i);
    if (exp_digits == 0) return false;
    i += exp_digits;
  }
  *integral = !has_point && !has_exponent;
  return i == text.size();
}

}  // namespace

CellValue CsvFieldValue(std::string_view text) {
  if (text.empty()) return CellValue::Null();
  if (EqualsIgnoringCase(text, "TRUE")) return CellValue::Boolean(true);
  if (EqualsIgnoringCase(text, "FALSE")) return CellValue::Boolean(false);
  bool integral = false;
  if (IsPlainNumber(text, &integral)) {
    if (integral) {
      // Exactly, not after rounding to a double: 2^53 + 1 must stay a string.
      int64_t value = 0;
      auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error == std::errc() && end == text.data() + text.size() &&
          value >= -kMaxExactInteger && value <= kMaxExactInteger) {
        return CellValue::Number(static_cast<double>(value));
      }
    } else {
      double value = 0;
      auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error == std::errc() && end == text.data() + text.size() &&
          std::isfinite(value)) {
        return CellValue::Number(value);
      }
    }
  }
  return CellValue::String(std::string(text));
}

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    uint32_t code = 0;
    if ((b & 0xE0) == 0xC0) {
      length = 2;
      code = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      length = 3;
      code = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      length = 4;
      code = b & 0x07;
    } else {
      return false;
    }
    if (i + length > n) return false;
    for (size_t k = 1; k < length; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      code = (code << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMinOfLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMinOfLength[length] || code > 0x10FFFF ||
        (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    i += length;
  }
  return true;
}

Status CsvParser::Error(const std::string& what) const {
  return InvalidArgument("CSV line " + std::to_string(line_) + ", field " +
                         std::to_string(column_) + ": " + what);
}

Status CsvParser::AddChar(char c) {
  if (field_.size() >= kMaxFieldBytes) {
    return Error("the field is longer than " + std::to_string(kMaxFieldBytes) + " bytes");
  }
  field_.push_back(c);
  return Status::OK();
}

Status CsvParser::EndField() {
  if (!field_.empty()) {
    if (!IsValidUtf8(field_)) {
      return Error("not valid UTF-8 (save the file as UTF-8)");
    }
    if (record_ > kMaxRow || column_ > kMaxColumn) {
      return Error("past the last row or column of the grid");
    }
    RETURN_IF_ERROR(sink_(CellRef{record_, column_}, Cell{CsvFieldValue(field_), ""}));
    field_.clear();
  }
  ++column_;
  state_ = State::kFieldStart;
  return Status::OK();
}

Status CsvParser::EndRecord() {
  ++record_;
  column_ = 1;
  return Status::OK();
}

Status CsvParser::Feed(std::string_view bytes) {
  size_t i = 0;
  // The BOM may arrive split across pieces; a partial match that fails is content.
  while (at_start_ && i < bytes.size()) {
    if (bytes[i] != kUtf8Bom[bom_seen_]) {
      at_start_ = false;
      const size_t replay = bom_seen_;
      bom_seen_ = 0;
      RETURN_IF_ERROR(Feed(kUtf8Bom.substr(0, replay)));
      break;
    }
    ++i;
    if (++bom_seen_ == kUtf8Bom.size()) at_start_ = false;
  }
  for (; i < bytes.size(); ++i) {
    const char c = bytes[i];
    switch (state_) {
      case State::kAfterCr:
        state_ = State::kFieldStart;
        if (c == '\n') continue;  // the LF of a CRLF
        [[fallthrough]];
      case State::kFieldStart:
        if (c == '"') {
          state_ = State::kQuoted;
          quote_line_ = line_;
          continue;
        }
        state_ = State::kUnquoted;
        [[fallthrough]];
      case State::kUnquoted:
      case State::kQuoteInQuoted:
        if (c == ',') {
          RETURN_IF_ERROR(EndField());
        } else if (c == '\n' || c == '\r') {
          RETURN_IF_ERROR(EndField());
          RETURN_IF_ERROR(EndRecord());
          ++line_;
          state_ = c == '\r' ? State::kAfterCr : State::kFieldStart;
        } else if (state_ == State::kQuoteInQuoted) {
          if (c != '"') {
            return Error(
                "unexpected character after a closing quote (a quote inside a quoted "
                "field is written as two quotes)");
          }
          RETURN_IF_ERROR(AddChar('"'));
          state_ = State::kQuoted;
        } else {
          RETURN_IF_ERROR(AddChar(c));
        }
        break;
      case State::kQuoted:
        if (c == '"') {
          state_ = State::kQuoteInQuoted;
        } else {
          if (c == '\n') ++line_;
          RETURN_IF_ERROR(AddChar(c));
        }
        break;
    }
  }
  return Status::OK();
}

Status CsvParser::Finish() {
  if (at_start_ && bom_seen_ > 0) {
    at_start_ = false;
    const size_t replay = bom_seen_;
    bom_seen_ = 0;
    RETURN_IF_ERROR(Feed(kUtf8Bom.substr(0, replay)));
  }
  at_start_ = false;
  switch (state_) {
    case State::kQuoted:
      return InvalidArgument("CSV line " + std::to_string(line_) +
                             ": unterminated quoted field (opened at line " +
                             std::to_string(quote_line_) + ", field " +
                             std::to_string(column_) + ")");
    case State::kAfterCr:
      return Status::OK();
    case State::kFieldStart:
      if (column_ == 1) return Status::OK();  // the input ended with a line end
      [[fallthrough]];
    case State::kUnquoted:
    case State::kQuoteInQuoted:
      RETURN_IF_ERROR(EndField());
      return EndRecord();
  }
  return Status::OK();
}

}  // namespace sheetlog
