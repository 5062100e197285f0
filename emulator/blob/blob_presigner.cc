#include "emulator/blob/blob_presigner.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cassert>

#include "emulator/blob/blob_files_internal.h"
#include "emulator/env/clock.h"

namespace sheetlog {
namespace {

constexpr size_t kMacBytes = 32;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<std::unique_ptr<BlobPresigner>> BlobPresigner::LoadOrCreate(
    const std::string& secret_path, Clock* clock) {
  struct stat st;
  if (::stat(secret_path.c_str(), &st) != 0) {
    if (errno != ENOENT) return blob_files::ErrnoStatus("stat", secret_path, errno);
    std::string secret(kSecretBytes, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()),
                   static_cast<int>(secret.size())) != 1) {
      return Internal("RAND_bytes failed to generate the presigning secret");
    }
    // Created 0600 from the start: the secret is never readable by others, even briefly.
    RETURN_IF_ERROR(blob_files::WriteFileAtomically(secret_path + ".tmp", secret_path,
                                                    secret, /*sync=*/true, 0600));
  } else if ((st.st_mode & 077) != 0) {
    if (::chmod(secret_path.c_str(), 0600) != 0) {
      return blob_files::ErrnoStatus("chmod", secret_path, errno);
    }
  }
  ASSIGN_OR_RETURN(std::string secret,
                   blob_files::ReadSmallFile(secret_path, kSecretBytes + 1));
  if (secret.size() != kSecretBytes) {
    return Internal("presigning secret " + secret_path + " holds " +
                    std::to_string(secret.size()) + " bytes, expected " +
                    std::to_string(kSecretBytes) +
                    "; remove it to generate a new one (revokes outstanding URLs)");
  }
  return std::make_unique<BlobPresigner>(std::move(secret), clock);
}

BlobPresigner::BlobPresigner(std::string secret, Clock* clock)
    : secret_(std::move(secret)), clock_(clock) {
  assert(secret_.size() == kSecretBytes);
}

bool BlobPresigner::Mac(std::string_view method, std::string_view key,
                        int64_t expires_unix_s, unsigned char out[32]) const {
  if (method.find('\n') != std::string_view::npos) return false;
  std::string message;
  message.reserve(method.size() + key.size() + 24);
  message.append(method).append("\n").append(key).append("\n").append(
      std::to_string(expires_unix_s));
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out,
       &length);
  return length == kMacBytes;
}

std::string BlobPresigner::Sign(std::string_view method, std::string_view key,
                                int64_t expires_unix_s) const {
  unsigned char mac[kMacBytes];
  // A method with '\n' gets a signature that never verifies (Verify refuses it).
  if (!Mac(method, key, expires_unix_s, mac)) return std::string(2 * kMacBytes, '0');
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * kMacBytes);
  for (unsigned char b : mac) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  return hex;
}

Status BlobPresigner::Verify(std::string_view method, std::string_view key,
                             int64_t expires_unix_s,
                             std::string_view signature_hex) const {
  static const Status kMismatch = PermissionDenied("signature does not match");
  unsigned char expected[kMacBytes];
  if (!Mac(method, key, expires_unix_s, expected)) return kMismatch;
  if (signature_hex.size() != 2 * kMacBytes) return kMismatch;
  unsigned char given[kMacBytes];
  bool hex_ok = true;
  for (size_t i = 0; i < kMacBytes; ++i) {
    int hi = HexValue(signature_hex[2 * i]);
    int lo = HexValue(signature_hex[2 * i + 1]);
    hex_ok &= hi >= 0 && lo >= 0;
    given[i] = static_cast<unsigned char>(((hi & 15) << 4) | (lo & 15));
  }
  if (CRYPTO_memcmp(expected, given, kMacBytes) != 0 || !hex_ok) return kMismatch;
  // Overflow-safe form of NowMicros() >= expires * 10^6.
  if (clock_->NowMicros() / 1000000 >= expires_unix_s) {
    return PermissionDenied("presigned URL expired");
  }
  return Status::OK();
}

}  // namespace sheetlog
