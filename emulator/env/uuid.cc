#include "emulator/env/uuid.h"

#include <openssl/evp.h>
#include <uuid/uuid.h>

#include <cstring>

namespace sheetlog {

namespace {
std::string Format(const unsigned char bytes[16]) {
  char text[37];
  uuid_unparse_lower(bytes, text);
  return text;
}
}  // namespace

std::string NewRandomUuid() {
  uuid_t bytes;
  uuid_generate_random(bytes);
  return Format(bytes);
}

std::string NameUuid(std::string_view namespace_uuid, std::string_view name) {
  std::string ns_text(namespace_uuid);
  uuid_t ns;
  if (!IsUuid(ns_text) || uuid_parse(ns_text.c_str(), ns) != 0) return "";
  std::string input(reinterpret_cast<const char*>(ns), sizeof(ns));
  input.append(name.data(), name.size());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  EVP_Digest(input.data(), input.size(), digest, &digest_len, EVP_sha1(), nullptr);
  unsigned char bytes[16];
  std::memcpy(bytes, digest, 16);
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x50);  // version 5
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  return Format(bytes);
}

bool IsUuid(std::string_view text) {
  if (text.size() != 36) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                 (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

}  // namespace sheetlog
