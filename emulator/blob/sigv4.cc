#include "emulator/blob/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <ctime>
#include <vector>

namespace sheetlog {

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

std::string HexOfBytes(const unsigned char* bytes, size_t n) {
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHexDigits[bytes[i] >> 4]);
    out.push_back(kHexDigits[bytes[i] & 0xf]);
  }
  return out;
}

// HMAC-SHA256(key, data), raw 32 bytes.
std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &length);
  return std::string(reinterpret_cast<const char*>(out), length);
}

}  // namespace

std::string SigV4UriEncode(std::string_view text, bool keep_slash) {
  static constexpr char kUpperHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
                            c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kUpperHex[c >> 4]);
      out.push_back(kUpperHex[c & 0xf]);
    }
  }
  return out;
}

std::string SigV4Timestamp(int64_t unix_s) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &utc);
  return buf;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  return HexOfBytes(digest, length);
}

SigV4Presigned SigV4Presign(const SigV4PresignRequest& request,
                            const SigV4Credentials& credentials) {
  const std::string timestamp = SigV4Timestamp(request.now_unix_s);
  const std::string date = timestamp.substr(0, 8);
  const std::string scope =
      date + "/" + request.region + "/" + request.service + "/aws4_request";

  // Canonical query: every parameter URI-encoded (names and values), sorted by name.
  std::map<std::string, std::string> encoded;
  for (const auto& [name, value] : request.query) {
    encoded[SigV4UriEncode(name, false)] = SigV4UriEncode(value, false);
  }
  encoded["X-Amz-Algorithm"] = "AWS4-HMAC-SHA256";
  encoded["X-Amz-Credential"] =
      SigV4UriEncode(credentials.access_key_id + "/" + scope, false);
  encoded["X-Amz-Date"] = timestamp;
  encoded["X-Amz-Expires"] = std::to_string(request.expires_seconds);
  encoded["X-Amz-SignedHeaders"] = "host";
  if (!credentials.session_token.empty()) {
    encoded["X-Amz-Security-Token"] = SigV4UriEncode(credentials.session_token, false);
  }
  std::string query;
  for (const auto& [name, value] : encoded) {
    if (!query.empty()) query += '&';
    query += name + "=" + value;
  }

  SigV4Presigned out;
  out.canonical_request = request.method + "\n" + request.encoded_path + "\n" + query +
                          "\n" + "host:" + request.host + "\n\n" + "host\n" +
                          "UNSIGNED-PAYLOAD";
  out.string_to_sign = "AWS4-HMAC-SHA256\n" + timestamp + "\n" + scope + "\n" +
                       Sha256Hex(out.canonical_request);
  std::string key = HmacSha256("AWS4" + credentials.secret_access_key, date);
  key = HmacSha256(key, request.region);
  key = HmacSha256(key, request.service);
  key = HmacSha256(key, "aws4_request");
  const std::string mac = HmacSha256(key, out.string_to_sign);
  out.signature =
      HexOfBytes(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
  out.url = request.scheme + "://" + request.host + request.encoded_path + "?" + query +
            "&X-Amz-Signature=" + out.signature;
  return out;
}

}  // namespace sheetlog
