// TLS for sheetlog's HTTP server, from OpenSSL (Debian's libssl): a server context
// made from a PEM certificate chain and private key, TLS 1.2 or later, with OpenSSL's
// default cipher suites for those versions (no renegotiation, no compression). A new
// context is made on each reload (SIGHUP) and used by connections accepted after it;
// open connections keep theirs.
#pragma once

#include <memory>
#include <string>

#include "emulator/status.h"

struct ssl_ctx_st;

namespace sheetlog::api::http {

// Immutable once loaded: thread-safe (shared by every connection accepted with it).
class TlsContext {
 public:
  // Loads `cert_file` (the server certificate first, then its chain) and `key_file`.
  // InvalidArgument naming the file and OpenSSL's reason if either cannot be read or
  // they do not belong together.
  static Result<std::shared_ptr<TlsContext>> Load(const std::string& cert_file,
                                                  const std::string& key_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_ctx_st* native() const { return context_; }

 private:
  explicit TlsContext(ssl_ctx_st* context) : context_(context) {}
  ssl_ctx_st* context_;
};

}  // namespace sheetlog::api::http
