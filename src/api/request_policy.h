// Internal to src/api: refuses requests a web page could make a browser send to this
// server. Two checks, on every request head before its route runs:
//  - Host (DNS rebinding: a foreign name re-pointed at this machine): the Host header
//    must name this server: an IP literal or "localhost" (or *.localhost), which DNS
//    cannot re-point, the listen host, or an --allowed-host entry ("name" any port,
//    "name:port" that port). A request without Host (not a browser) passes.
//  - Origin (cross-site requests): a state-changing request (any method but GET, HEAD,
//    OPTIONS) that carries an Origin other than this server's own (http:// or https://
//    plus its Host), or Sec-Fetch-Site: cross-site, is refused. Tools that send no
//    Origin (curl, the CLI, SDKs) pass; a page served by this server (the console)
//    sends its own origin and passes.
// A refusal is a 403 whose message says what to do.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/api/http/http_message.h"

namespace sheetlog::api {

class RequestPolicy {
 public:
  RequestPolicy(std::string listen_host, std::vector<std::string> allowed_hosts);
  // The bound port (known after Bind).
  void set_port(int port) { port_ = port; }

  // nullopt if the request may proceed; else the message of its 403.
  std::optional<std::string> Check(const http::Request& request) const;

 private:
  bool HostAllowed(const std::string& host_header) const;

  std::string listen_host_;
  std::vector<std::string> allowed_hosts_;  // lower case
  int port_ = 0;                            // for messages
};

}  // namespace sheetlog::api
