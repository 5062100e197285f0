// Presigned blob URLs: a capability to perform one method on one key until an expiry
// time, without the server's bearer token (seed 000: the client uploads a large entry's
// body straight to a signed URL).
//
// signature = lowercase hex of HMAC-SHA256(secret, "<method>\n<key>\n<expires>")
// where <expires> is the decimal Unix time in seconds. Keys never contain '\n' (see
// blob_key.h) and methods containing '\n' are refused, so the string is unambiguous.
//
// The 32-byte secret is generated once from OpenSSL's RAND_bytes and kept in a file of
// its own (mode 0600, written to a temporary file, synced and renamed into place, so a
// crash never leaves a short secret). It survives restarts: URLs signed before a restart
// stay valid until they expire. Deleting the file revokes every outstanding URL.
//
// Thread-safe (immutable after construction).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "emulator/status.h"

namespace sheetlog {

class Clock;

class BlobPresigner {
 public:
  static constexpr size_t kSecretBytes = 32;

  // Reads the secret from `secret_path`, creating the file first if it does not exist.
  // Fails with Internal if the file exists but does not hold exactly kSecretBytes bytes
  // (it is never overwritten: that would silently revoke outstanding URLs).
  // Tightens the file's mode to 0600 if it was looser. `clock` must outlive the object.
  static Result<std::unique_ptr<BlobPresigner>> LoadOrCreate(
      const std::string& secret_path, Clock* clock);

  // REQUIRES: secret.size() == kSecretBytes.
  BlobPresigner(std::string secret, Clock* clock);

  // The signature for `method` (as sent, e.g. "PUT"; case matters) on `key`, valid
  // while the clock is before `expires_unix_s`. Does not validate the key.
  std::string Sign(std::string_view method, std::string_view key,
                   int64_t expires_unix_s) const;

  // OK if `signature_hex` is Sign(method, key, expires_unix_s) and the clock has not
  // reached `expires_unix_s`. The signature is checked first, in constant time
  // (CRYPTO_memcmp), so a forged URL learns nothing about expiry:
  //   PermissionDenied("signature does not match")  wrong, malformed (not 64 hex digits,
  //                                                  either case) or for another
  //                                                  method/key/expiry
  //   PermissionDenied("presigned URL expired")      NowMicros() >= expires * 10^6
  Status Verify(std::string_view method, std::string_view key, int64_t expires_unix_s,
                std::string_view signature_hex) const;

 private:
  // Raw 32-byte HMAC, or false if `method` contains '\n'.
  bool Mac(std::string_view method, std::string_view key, int64_t expires_unix_s,
           unsigned char out[32]) const;

  const std::string secret_;
  Clock* const clock_;
};

}  // namespace sheetlog
