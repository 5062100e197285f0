#include "src/api/request_policy.h"

#include <arpa/inet.h>
#include <strings.h>

#include <algorithm>
#include <cctype>

namespace sheetlog::api {
namespace {

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Splits "name:port", "[v6]:port", "name" into name (lower case, brackets removed) and
// port (-1 if none, -2 if malformed).
void SplitHost(const std::string& host, std::string* name, int* port) {
  const std::string rest = Lower(host);
  std::string after;  // what follows the name: "" or ":port"
  if (!rest.empty() && rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos) {
      *port = -2;
      return;
    }
    *name = rest.substr(1, close - 1);
    after = rest.substr(close + 1);
  } else {
    size_t colon = rest.find(':');
    if (colon != std::string::npos && rest.find(':', colon + 1) != std::string::npos) {
      *port = -2;  // an IPv6 address must be in brackets
      return;
    }
    *name = rest.substr(0, colon);
    if (colon != std::string::npos) after = rest.substr(colon);
  }
  *port = -1;
  if (after.empty()) return;
  std::string digits = after.substr(1);
  if (after[0] != ':' || digits.empty() || digits.size() > 5 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](unsigned char c) { return std::isdigit(c) != 0; })) {
    *port = -2;
    return;
  }
  *port = std::stoi(digits);
}

bool IsIpLiteral(const std::string& name) {
  in_addr v4{};
  in6_addr v6{};
  return inet_pton(AF_INET, name.c_str(), &v4) == 1 ||
         inet_pton(AF_INET6, name.c_str(), &v6) == 1;
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

RequestPolicy::RequestPolicy(std::string listen_host,
                             std::vector<std::string> allowed_hosts)
    : listen_host_(Lower(std::move(listen_host))) {
  if (listen_host_.size() > 2 && listen_host_.front() == '[') {
    listen_host_ = listen_host_.substr(1, listen_host_.size() - 2);
  }
  for (std::string& host : allowed_hosts) allowed_hosts_.push_back(Lower(host));
}

bool RequestPolicy::HostAllowed(const std::string& host_header) const {
  std::string name;
  int port = -1;
  SplitHost(host_header, &name, &port);
  if (port == -2 || name.empty()) return false;
  const int effective_port = port == -1 ? 80 : port;
  for (const std::string& entry : allowed_hosts_) {
    if (entry == name) return true;  // "name": any port
    std::string entry_name;
    int entry_port = -1;
    SplitHost(entry, &entry_name, &entry_port);
    if (entry_port >= 0 && entry_name == name && entry_port == effective_port) {
      return true;
    }
  }
  // An IP literal cannot be re-pointed by DNS, and localhost names always resolve to
  // this machine: any port (a proxy in front may use its own). A page of another local
  // service is another origin: the Origin check, not this one, refuses its writes.
  return IsIpLiteral(name) || name == "localhost" || EndsWith(name, ".localhost") ||
         name == listen_host_;
}

std::optional<std::string> RequestPolicy::Check(const http::Request& request) const {
  const std::string host = request.get_header_value("Host");
  const std::string own = "127.0.0.1:" + std::to_string(port_);
  if (request.has_header("Host") && !HostAllowed(host)) {
    return "Host '" + host +
           "' is not an address of this server (a guard against DNS rebinding): use "
           "http://" +
           own + "/ or an IP address of this machine, or start the server with " +
           "--allowed-host " + host;
  }
  const std::string& method = request.method;
  if (method == "GET" || method == "HEAD" || method == "OPTIONS") return std::nullopt;
  if (strcasecmp(request.get_header_value("Sec-Fetch-Site").c_str(), "cross-site") == 0) {
    return "cross-site request refused: a page from another site may not change data "
           "here; send the request from this server's own pages, or from a tool "
           "(without Origin or Sec-Fetch-Site headers)";
  }
  if (!request.has_header("Origin")) return std::nullopt;
  const std::string origin = Lower(request.get_header_value("Origin"));
  const std::string host_lower = Lower(host);
  if (!host.empty() &&
      (origin == "http://" + host_lower || origin == "https://" + host_lower)) {
    return std::nullopt;
  }
  return "cross-site request refused: Origin '" + request.get_header_value("Origin") +
         "' is not this server's origin (http://" + (host.empty() ? own : host) +
         "); a page may only change data on the server it was loaded from (tools: "
         "send no Origin header)";
}

}  // namespace sheetlog::api
