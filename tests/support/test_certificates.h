// TLS material for tests, made with Debian's openssl command: a throwaway certificate
// authority and a server certificate it signed for 127.0.0.1 and localhost, valid for a
// day. Nothing here is secret or kept.
#pragma once

#include <string>

namespace sheetlog::testing {

struct TestCertificate {
  std::string ca_file;    // the authority's certificate (PEM): curl --cacert
  std::string cert_file;  // the server's certificate (PEM)
  std::string key_file;   // the server's private key (PEM)
};

// Writes `<dir>/<name>-{ca,cert,key}.pem`. False (with openssl's output in *error) if
// openssl failed.
bool MakeTestCertificate(const std::string& dir, const std::string& name,
                         TestCertificate* out, std::string* error);

// Runs `command` with /bin/sh, its stdout and stderr in *output; returns its exit
// status (0-255), or -1 if it did not exit.
int RunCommand(const std::string& command, std::string* output);

}  // namespace sheetlog::testing
