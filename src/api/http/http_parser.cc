#include "src/api/http/http_parser.h"

#include <strings.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>

namespace sheetlog::api::http {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// True if the comma-separated list `value` holds `token` (case-insensitive).
bool ListHas(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = Trim(value.substr(0, comma));
    if (EqualsIgnoreCase(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A trailer field line: "Name: value", a token name, no folding, no control bytes
// (trailers are read and dropped, but must be well-formed like header fields).
bool ValidTrailerField(std::string_view line) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view name = line.substr(0, colon);
  if (!std::all_of(name.begin(), name.end(), IsTokenChar)) return false;
  for (char c : line.substr(colon + 1)) {
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

// The values of every `name` field line, joined with ", " (a list field's value).
std::string JoinedValues(const Headers& headers, const std::string& name) {
  std::string joined;
  auto [first, last] = headers.equal_range(name);
  for (auto it = first; it != last; ++it) {
    if (!joined.empty()) joined += ", ";
    joined += it->second;
  }
  return joined;
}

bool Refuse(ParseError* error, int status, std::string message) {
  error->status = status;
  error->message = std::move(message);
  return false;
}

}  // namespace

HeadScan ScanHead(std::string_view buffer, size_t search_from) {
  // Resume a little before `search_from`: the terminator may straddle it.
  size_t at = search_from >= 3 ? search_from - 3 : 0;
  while (true) {
    const size_t lf = buffer.find('\n', at);
    if (lf == std::string_view::npos) return HeadScan{};
    if (lf == 0 || buffer[lf - 1] != '\r') return HeadScan{std::string_view::npos, true};
    if (lf >= 3 && buffer[lf - 2] == '\n' && buffer[lf - 3] == '\r') {
      return HeadScan{lf + 1, false};
    }
    at = lf + 1;
  }
}

std::string PercentDecode(std::string_view text, bool plus_as_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      int high = HexValue(text[i + 1]);
      int low = HexValue(text[i + 2]);
      if (high >= 0 && low >= 0) {
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_as_space && c == '+' ? ' ' : c);
  }
  return out;
}

void ParseQuery(std::string_view query, Params* params) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    if (!pair.empty()) {
      size_t eq = pair.find('=');
      std::string_view key = pair.substr(0, eq);
      std::string_view value =
          eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
      params->emplace(PercentDecode(key, true), PercentDecode(value, true));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
}

bool ParseRequestHead(std::string_view head, size_t max_headers, RequestHead* out,
                      ParseError* error) {
  size_t line_end = head.find("\r\n");
  if (line_end == std::string_view::npos) {
    return Refuse(error, 400, "the request line is not terminated by CRLF");
  }
  std::string_view line = head.substr(0, line_end);
  // request-line = method SP request-target SP HTTP-version
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Refuse(error, 400, "malformed request line (want 'METHOD /path HTTP/1.1')");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), IsTokenChar)) {
    return Refuse(error, 400, "malformed request method");
  }
  // HTTP-version = "HTTP/" DIGIT "." DIGIT. A later 1.x is served as 1.1 (RFC 9110
  // 6.2: a recipient uses the highest minor version it implements).
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !IsDigit(version[5]) ||
      version[6] != '.' || !IsDigit(version[7])) {
    return Refuse(error, 400, "malformed HTTP version");
  }
  if (version[5] != '1') {
    return Refuse(error, 505, "only HTTP/1.0 and HTTP/1.1 are supported");
  }
  out->minor_version = version[7] == '0' ? 0 : 1;
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Refuse(error, 400, "the request target holds a control character");
    }
  }
  // The request target (RFC 9112 3.2): origin-form "/path?query"; absolute-form
  // "http://host/path?query", whose authority replaces the Host header (3.2.2);
  // asterisk-form "*" for OPTIONS only. Authority-form (CONNECT) is not served.
  std::string_view origin_form = target;
  std::optional<std::string_view> authority;
  if (target == "*") {
    if (method != "OPTIONS") {
      return Refuse(error, 400, "the request target '*' is only for OPTIONS");
    }
  } else if (target.empty() || target.front() != '/') {
    const size_t scheme_end = target.find("://");
    const std::string_view scheme = scheme_end == std::string_view::npos
                                        ? std::string_view()
                                        : target.substr(0, scheme_end);
    if (!EqualsIgnoreCase(scheme, "http") && !EqualsIgnoreCase(scheme, "https")) {
      return Refuse(error, 400,
                    "the request target must be a path starting with '/' (or an "
                    "absolute http URI)");
    }
    std::string_view rest = target.substr(scheme_end + 3);
    const size_t path_at = rest.find_first_of("/?");
    authority = rest.substr(0, path_at);
    if (authority->empty() || authority->find('@') != std::string_view::npos) {
      return Refuse(error, 400, "the request target's authority must be a host[:port]");
    }
    origin_form =
        path_at == std::string_view::npos ? std::string_view() : rest.substr(path_at);
  }

  Request& request = out->request;
  request.method = std::string(method);
  if (target == "*") {
    request.target = "*";
    request.path = "*";
  } else {
    // An absolute-form target without a path asks for "/".
    request.target = origin_form.empty() || origin_form.front() == '?'
                         ? "/" + std::string(origin_form)
                         : std::string(origin_form);
    const std::string_view normalized = request.target;
    const size_t question = normalized.find('?');
    request.path = PercentDecode(normalized.substr(0, question), false);
    if (question != std::string_view::npos) {
      ParseQuery(normalized.substr(question + 1), &request.params);
    }
  }

  // Header fields.
  size_t count = 0;
  size_t pos = line_end + 2;
  bool has_length = false;
  bool has_transfer_encoding = false;
  std::string transfer_encoding;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos) {
      return Refuse(error, 400, "a header line is not terminated by CRLF");
    }
    std::string_view field = head.substr(pos, end - pos);
    pos = end + 2;
    if (field.empty()) break;  // the blank line ending the head
    if (field.front() == ' ' || field.front() == '\t') {
      return Refuse(error, 400, "obsolete header line folding is not accepted");
    }
    if (++count > max_headers) {
      return Refuse(
          error, 431,
          "too many header fields (at most " + std::to_string(max_headers) + ")");
    }
    size_t colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Refuse(error, 400, "malformed header line (want 'Name: value')");
    }
    std::string_view name = field.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), IsTokenChar)) {
      return Refuse(error, 400, "malformed header name");
    }
    std::string_view value = Trim(field.substr(colon + 1));
    for (char c : value) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
        return Refuse(error, 400, "a header value holds a control character");
      }
    }
    if (EqualsIgnoreCase(name, "Content-Length")) {
      int64_t length = -1;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() ||
          length < 0) {
        return Refuse(error, 400, "Content-Length must be a non-negative integer");
      }
      if (has_length && length != out->content_length) {
        return Refuse(error, 400, "conflicting Content-Length headers");
      }
      has_length = true;
      out->content_length = length;
    } else if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
      has_transfer_encoding = true;
      if (!transfer_encoding.empty()) transfer_encoding += ",";
      transfer_encoding += std::string(value);
    }
    request.headers.emplace(std::string(name), std::string(value));
  }

  if (has_transfer_encoding) {
    if (has_length) {
      // RFC 9112 6.1: a request with both is a smuggling attempt or broken.
      return Refuse(error, 400,
                    "a request must not carry both Content-Length and Transfer-Encoding");
    }
    if (!EqualsIgnoreCase(Trim(transfer_encoding), "chunked")) {
      return Refuse(error, 501,
                    "Transfer-Encoding '" + transfer_encoding +
                        "' is not supported (only chunked)");
    }
    out->chunked = true;
    out->content_length = 0;
  }

  // Fields that must appear once (RFC 9110 5.3: only list-valued fields may repeat;
  // RFC 9112 3.2 for Host): two values would be read one way here and another way by
  // a proxy in front. Those that decide who is asking may not repeat at all; the others
  // only with the same value (some clients repeat a Content-Type).
  for (const char* singleton :
       {"Host", "Authorization", "Proxy-Authorization", "Origin", "Sec-Fetch-Site"}) {
    if (request.headers.count(singleton) > 1) {
      return Refuse(error, 400,
                    std::string("more than one ") + singleton + " header field");
    }
  }
  for (const char* singleton : {"Content-Type", "Range", "If-Range"}) {
    auto [first, last] = request.headers.equal_range(singleton);
    for (auto it = first; it != last; ++it) {
      if (it->second != first->second) {
        return Refuse(error, 400,
                      std::string("conflicting ") + singleton + " header fields");
      }
    }
  }
  if (authority) {
    // RFC 9112 3.2.2: the target's authority is the host, whatever Host says.
    request.headers.erase("Host");
    request.headers.emplace("Host", std::string(*authority));
  } else if (out->minor_version == 1 && !request.has_header("Host")) {
    return Refuse(error, 400, "an HTTP/1.1 request must carry a Host header field");
  }

  // List-valued fields are read as one list, however many lines carry them.
  const std::string connection = JoinedValues(request.headers, "Connection");
  if (out->minor_version == 0) {
    out->keep_alive = ListHas(connection, "keep-alive") && !ListHas(connection, "close");
  } else {
    out->keep_alive = !ListHas(connection, "close");
  }
  out->expect_continue = ListHas(JoinedValues(request.headers, "Expect"), "100-continue");
  std::string coding(Trim(JoinedValues(request.headers, "Content-Encoding")));
  if (coding.empty() || EqualsIgnoreCase(coding, "identity")) {
    out->gzip = false;
  } else if (EqualsIgnoreCase(coding, "gzip") || EqualsIgnoreCase(coding, "x-gzip")) {
    out->gzip = true;
  } else {
    return Refuse(error, 415,
                  "Content-Encoding '" + coding +
                      "' is not supported (send gzip or an unencoded body)");
  }
  return true;
}

bool IsTokenChar(char c) {
  // RFC 9110 tchar.
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
    return true;
  }
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// --- BodyDecoder ---

BodyDecoder BodyDecoder::Length(int64_t length) {
  BodyDecoder decoder(length > 0 ? Phase::kLength : Phase::kDone);
  decoder.remaining_ = length > 0 ? static_cast<uint64_t>(length) : 0;
  return decoder;
}

BodyDecoder BodyDecoder::Chunked() { return BodyDecoder(Phase::kSizeLine); }

BodyDecoder::State BodyDecoder::Fail(std::string message) {
  error_ = std::move(message);
  phase_ = Phase::kDone;
  return State::kError;
}

BodyDecoder::State BodyDecoder::Decode(std::string_view input, std::string* out,
                                       size_t max_out, size_t* consumed) {
  constexpr size_t kMaxLine = 4096;          // a chunk-size line with extensions
  constexpr size_t kMaxTrailerBytes = 8192;  // all trailer fields together
  size_t pos = 0;
  size_t produced = 0;
  auto finish = [&](State state) {
    *consumed = pos;
    return state;
  };
  if (!error_.empty()) return finish(State::kError);
  while (true) {
    switch (phase_) {
      case Phase::kDone:
        return finish(State::kDone);
      case Phase::kLength:
      case Phase::kData: {
        size_t take = static_cast<size_t>(std::min<uint64_t>(
            remaining_, std::min(input.size() - pos, max_out - produced)));
        out->append(input.data() + pos, take);
        pos += take;
        produced += take;
        remaining_ -= take;
        if (remaining_ == 0) {
          phase_ = phase_ == Phase::kLength ? Phase::kDone : Phase::kDataEnd;
          continue;
        }
        return finish(State::kMore);
      }
      case Phase::kDataEnd:
      case Phase::kSizeLine:
      case Phase::kTrailer: {
        // Read one line (CRLF-terminated) into line_.
        size_t lf = input.find('\n', pos);
        size_t upto = lf == std::string_view::npos ? input.size() : lf + 1;
        line_.append(input.data() + pos, upto - pos);
        if (phase_ == Phase::kTrailer) trailer_bytes_ += upto - pos;
        pos = upto;
        if (line_.size() > kMaxLine || trailer_bytes_ > kMaxTrailerBytes) {
          return finish(Fail("a chunk-size or trailer line is too long"));
        }
        if (lf == std::string_view::npos) return finish(State::kMore);
        if (line_.size() < 2 || line_[line_.size() - 2] != '\r') {
          return finish(Fail("a chunked body line is not terminated by CRLF"));
        }
        std::string_view text(line_.data(), line_.size() - 2);
        if (phase_ == Phase::kDataEnd) {
          if (!text.empty()) return finish(Fail("chunk data is longer than its size"));
          phase_ = Phase::kSizeLine;
        } else if (phase_ == Phase::kSizeLine) {
          // chunk-size [ BWS ";" chunk-ext ] (RFC 9112 7.1): hex digits first, no
          // leading whitespace; whitespace only before an extension.
          size_t digits = 0;
          while (digits < text.size() && HexValue(text[digits]) >= 0) ++digits;
          if (digits == 0 || digits > 15) return finish(Fail("malformed chunk size"));
          std::string_view after = text.substr(digits);
          std::string_view extension = Trim(after);
          if (!after.empty() && (extension.empty() || extension.front() != ';')) {
            return finish(Fail("malformed chunk size"));
          }
          for (char c : extension) {
            if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
              return finish(Fail("a chunk extension holds a control character"));
            }
          }
          uint64_t size = 0;
          for (size_t i = 0; i < digits; ++i) {
            size = size * 16 + static_cast<uint64_t>(HexValue(text[i]));
          }
          remaining_ = size;
          phase_ = size == 0 ? Phase::kTrailer : Phase::kData;
        } else if (text.empty()) {
          phase_ = Phase::kDone;  // the blank line after the (ignored) trailer fields
        } else if (!ValidTrailerField(text)) {
          return finish(Fail("malformed trailer field (want 'Name: value')"));
        }
        line_.clear();
        continue;
      }
    }
  }
}

// --- GzipInflater ---

struct GzipInflater::Stream {
  z_stream z{};
  bool initialized = false;
};

GzipInflater::GzipInflater() : stream_(std::make_unique<Stream>()) {
  // 16 + MAX_WBITS: a gzip wrapper only (not zlib or raw deflate).
  if (inflateInit2(&stream_->z, 16 + MAX_WBITS) == Z_OK) stream_->initialized = true;
}

GzipInflater::~GzipInflater() {
  if (stream_->initialized) inflateEnd(&stream_->z);
}

GzipInflater::State GzipInflater::Inflate(std::string_view input, std::string* out,
                                          size_t max_total) {
  if (!stream_->initialized) {
    error_ = "cannot start zlib";
    return State::kError;
  }
  if (finished_) {
    if (input.empty()) return State::kDone;
    error_ = "data after the end of the gzip stream";
    return State::kError;
  }
  z_stream& z = stream_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  z.avail_in = static_cast<uInt>(input.size());
  constexpr size_t kStep = 16384;
  while (true) {
    // Inflate into at most one step past the limit, so the output never grows beyond
    // max_total + kStep whatever the compression ratio.
    size_t before = out->size();
    out->resize(before + kStep);
    z.next_out = reinterpret_cast<Bytef*>(out->data() + before);
    z.avail_out = static_cast<uInt>(kStep);
    int rc = inflate(&z, Z_NO_FLUSH);
    out->resize(before + (kStep - z.avail_out));
    if (out->size() > max_total) return State::kTooLarge;
    if (rc == Z_STREAM_END) {
      finished_ = true;
      if (z.avail_in != 0) {
        error_ = "data after the end of the gzip stream";
        return State::kError;
      }
      return State::kDone;
    }
    if (rc == Z_BUF_ERROR || (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0)) {
      return State::kMore;  // needs more input
    }
    if (rc != Z_OK) {
      error_ = std::string("the body is not valid gzip: ") +
               (z.msg != nullptr ? z.msg : "inflate failed");
      return State::kError;
    }
  }
}

}  // namespace sheetlog::api::http
