#include "tests/support/test_certificates.h"

#include <sys/wait.h>

#include <cstdio>

namespace sheetlog::testing {

int RunCommand(const std::string& command, std::string* output) {
  output->clear();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output->append(buffer, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool MakeTestCertificate(const std::string& dir, const std::string& name,
                         TestCertificate* out, std::string* error) {
  const std::string base = dir + "/" + name;
  out->ca_file = base + "-ca.pem";
  out->cert_file = base + "-cert.pem";
  out->key_file = base + "-key.pem";
  const std::string ca_key = base + "-ca-key.pem";
  const std::string request = base + "-req.pem";
  const std::string extensions = base + "-ext.cnf";
  const std::string commands =
      "set -e; "
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-days 1 -subj '/CN=sheetlog test CA " +
      name + "' -keyout '" + ca_key + "' -out '" + out->ca_file +
      "'; "
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-subj '/CN=127.0.0.1' -keyout '" +
      out->key_file + "' -out '" + request +
      "'; "
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > '" +
      extensions +
      "'; "
      "openssl x509 -req -in '" +
      request + "' -CA '" + out->ca_file + "' -CAkey '" + ca_key +
      "' -CAcreateserial -days 1 -extfile '" + extensions + "' -out '" + out->cert_file +
      "'";
  return RunCommand(commands, error) == 0;
}

}  // namespace sheetlog::testing
