// Value: DynamoDB attribute values, their sizes and their order (table.h).
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstring>

#include "emulator/table/table.h"

namespace sheetlog {

// ---------------------------------------------------------------------------
// Value

Value Value::Bytes(std::string bytes) {
  Value v;
  v.v_ = BytesTag{std::move(bytes)};
  return v;
}

Value::Type Value::type() const {
  switch (v_.index()) {
    case 0:
      return Type::kNull;
    case 1:
      return Type::kInt;
    case 2:
      return Type::kDouble;
    case 3:
      return Type::kString;
    case 4:
      return Type::kBytes;
    default:
      return Type::kBool;
  }
}

int64_t Value::AsInt() const {
  if (const auto* i = std::get_if<int64_t>(&v_)) return *i;
  if (const auto* b = std::get_if<bool>(&v_)) return *b ? 1 : 0;
  assert(false && "Value::AsInt on a non-integer");
  return 0;
}

double Value::AsDouble() const {
  if (const auto* d = std::get_if<double>(&v_)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
  assert(false && "Value::AsDouble on a non-number");
  return 0;
}

bool Value::AsBool() const {
  if (const auto* b = std::get_if<bool>(&v_)) return *b;
  if (const auto* i = std::get_if<int64_t>(&v_)) return *i != 0;
  assert(false && "Value::AsBool on a non-bool");
  return false;
}

const std::string& Value::AsString() const {
  if (const auto* s = std::get_if<std::string>(&v_)) return *s;
  if (const auto* b = std::get_if<BytesTag>(&v_)) return b->bytes;
  assert(false && "Value::AsString on a non-string");
  static const std::string kEmpty;
  return kEmpty;
}

namespace {

// Shortest text that reads back as the same double (what a DynamoDB client would send).
std::string DoubleText(double d) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  if (ec != std::errc()) return "0";
  return std::string(buf, end);
}

bool IsNumber(Value::Type t) {
  return t == Value::Type::kInt || t == Value::Type::kDouble || t == Value::Type::kBool;
}

// Kind rank for the container order: null, number, string, bytes.
int KindRank(Value::Type t) {
  if (t == Value::Type::kNull) return 0;
  if (IsNumber(t)) return 1;
  if (t == Value::Type::kString) return 2;
  return 3;
}

template <typename T>
int Sign(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

}  // namespace

int64_t Value::DynamoSize() const {
  switch (type()) {
    case Type::kNull:
    case Type::kBool:
      return 1;
    case Type::kInt:
      return IntegerNumberSize(std::get<int64_t>(v_));
    case Type::kDouble:
      return NumberSize(DoubleText(std::get<double>(v_)));
    case Type::kString:
      return static_cast<int64_t>(std::get<std::string>(v_).size());
    case Type::kBytes:
      return static_cast<int64_t>(std::get<BytesTag>(v_).bytes.size());
  }
  return 0;
}

std::optional<int> Value::Compare(const Value& a, const Value& b) {
  Type ta = a.type();
  Type tb = b.type();
  if (IsNumber(ta) && IsNumber(tb)) {
    if (ta != Type::kDouble && tb != Type::kDouble) return Sign(a.AsInt(), b.AsInt());
    // long double holds every int64 exactly on x86-64, so mixed compares stay exact.
    long double x =
        ta == Type::kDouble ? a.AsDouble() : static_cast<long double>(a.AsInt());
    long double y =
        tb == Type::kDouble ? b.AsDouble() : static_cast<long double>(b.AsInt());
    if (std::isnan(x) || std::isnan(y)) return std::nullopt;
    return Sign(x, y);
  }
  if (ta != tb) return std::nullopt;
  if (ta == Type::kString || ta == Type::kBytes) {
    // std::string compares bytes as unsigned char: DynamoDB's UTF-8 byte order.
    int c = a.AsString().compare(b.AsString());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (ta == Type::kNull) return 0;
  return std::nullopt;
}

bool Value::operator==(const Value& other) const {
  std::optional<int> c = Compare(*this, other);
  return c.has_value() && *c == 0;
}

bool Value::operator<(const Value& other) const {
  int ra = KindRank(type());
  int rb = KindRank(other.type());
  if (ra != rb) return ra < rb;
  std::optional<int> c = Compare(*this, other);
  return c.has_value() && *c < 0;
}

std::string Value::DebugString() const {
  switch (type()) {
    case Type::kNull:
      return "NULL";
    case Type::kInt:
      return std::to_string(std::get<int64_t>(v_));
    case Type::kDouble:
      return DoubleText(std::get<double>(v_));
    case Type::kString:
      return "\"" + std::get<std::string>(v_) + "\"";
    case Type::kBytes: {
      static const char kHex[] = "0123456789abcdef";
      std::string out = "b\"";
      for (unsigned char c : std::get<BytesTag>(v_).bytes) {
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
      }
      return out + "\"";
    }
    case Type::kBool:
      return std::get<bool>(v_) ? "true" : "false";
  }
  return "?";
}

}  // namespace sheetlog
