#include "src/api/http/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace sheetlog::api::http {
namespace {

// OpenSSL's error queue as one line (and cleared).
std::string OpenSslErrors() {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    char line[256];
    ERR_error_string_n(code, line, sizeof(line));
    if (!text.empty()) text += "; ";
    text += line;
  }
  return text.empty() ? "unknown error" : text;
}

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::Load(const std::string& cert_file,
                                                     const std::string& key_file) {
  ERR_clear_error();
  SSL_CTX* context = SSL_CTX_new(TLS_server_method());
  if (context == nullptr)
    return Unavailable("cannot create a TLS context: " + OpenSslErrors());
  std::shared_ptr<TlsContext> owned(new TlsContext(context));
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                   SSL_OP_CIPHER_SERVER_PREFERENCE);
  // The loop retries a write with its buffer grown or moved, and takes what a partial
  // write accepted.
  SSL_CTX_set_mode(context,
                   SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(context, cert_file.c_str()) != 1) {
    return InvalidArgument("--tls-cert " + cert_file + ": " + OpenSslErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(context, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    // Also where a key that is not the certificate's is caught ("key values mismatch").
    return InvalidArgument("--tls-key " + key_file + " (for the certificate " +
                           cert_file + "): " + OpenSslErrors());
  }
  if (SSL_CTX_check_private_key(context) != 1) {
    return InvalidArgument("--tls-key " + key_file + " does not match the certificate " +
                           cert_file + ": " + OpenSslErrors());
  }
  return owned;
}

TlsContext::~TlsContext() { SSL_CTX_free(context_); }

}  // namespace sheetlog::api::http
