// RequestPolicy (src/api/request_policy.h): the Host check against DNS rebinding and
// the Origin check against cross-site writes, on request heads alone.
#include "src/api/request_policy.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

namespace sheetlog::api {
namespace {

http::Request Head(const std::string& method,
                   const std::map<std::string, std::string>& headers) {
  http::Request request;
  request.method = method;
  request.target = "/v1/sheets";
  request.path = "/v1/sheets";
  for (const auto& [name, value] : headers) request.headers.emplace(name, value);
  return request;
}

RequestPolicy Policy() {
  RequestPolicy policy("127.0.0.1", {"sheets.example", "proxy.example:8443"});
  policy.set_port(8787);
  return policy;
}

TEST(RequestPolicyTest, HostMayBeAnIpLiteralLocalhostTheListenHostOrAnAllowedHost) {
  const RequestPolicy policy = Policy();
  for (const char* host : {"127.0.0.1:8787", "10.1.2.3", "[::1]:8787", "localhost:8787",
                           "LocalHost", "app.localhost:3000", "sheets.example",
                           "Sheets.Example:9999", "proxy.example:8443"}) {
    EXPECT_EQ(policy.Check(Head("GET", {{"Host", host}})), std::nullopt) << host;
  }
  // No Host header at all: not a browser.
  EXPECT_EQ(policy.Check(Head("POST", {})), std::nullopt);
}

TEST(RequestPolicyTest, AForeignHostIsRefusedWithWhatToDo) {
  const RequestPolicy policy = Policy();
  for (const char* host : {"evil.example", "evil.example:8787", "proxy.example",
                           "proxy.example:80", "::1", "a:b:c"}) {
    const std::optional<std::string> refusal =
        policy.Check(Head("GET", {{"Host", host}}));
    ASSERT_TRUE(refusal.has_value()) << host;
    EXPECT_NE(refusal->find("DNS rebinding"), std::string::npos) << *refusal;
  }
  const std::optional<std::string> refusal =
      policy.Check(Head("GET", {{"Host", "evil.example"}}));
  EXPECT_NE(refusal->find("--allowed-host evil.example"), std::string::npos) << *refusal;
}

TEST(RequestPolicyTest, WritesFromAnotherOriginAreRefusedReadsAreNot) {
  const RequestPolicy policy = Policy();
  const std::map<std::string, std::string> cross = {{"Host", "127.0.0.1:8787"},
                                                    {"Origin", "http://evil.example"}};
  for (const char* method : {"POST", "PUT", "PATCH", "DELETE"}) {
    const std::optional<std::string> refusal = policy.Check(Head(method, cross));
    ASSERT_TRUE(refusal.has_value()) << method;
    EXPECT_NE(refusal->find("Origin 'http://evil.example'"), std::string::npos)
        << *refusal;
  }
  for (const char* method : {"GET", "HEAD", "OPTIONS"}) {
    EXPECT_EQ(policy.Check(Head(method, cross)), std::nullopt) << method;
  }
}

TEST(RequestPolicyTest, WritesFromThisServersOwnOriginOrWithoutOriginPass) {
  const RequestPolicy policy = Policy();
  EXPECT_EQ(policy.Check(Head("POST", {{"Host", "127.0.0.1:8787"},
                                       {"Origin", "http://127.0.0.1:8787"}})),
            std::nullopt);
  EXPECT_EQ(policy.Check(Head("POST", {{"Host", "localhost:8787"},
                                       {"Origin", "HTTPS://LOCALHOST:8787"}})),
            std::nullopt);
  EXPECT_EQ(policy.Check(Head("POST", {{"Host", "127.0.0.1:8787"}})), std::nullopt);
  // Another port of the same machine is another origin.
  EXPECT_TRUE(policy
                  .Check(Head("POST", {{"Host", "127.0.0.1:8787"},
                                       {"Origin", "http://127.0.0.1:3000"}}))
                  .has_value());
}

TEST(RequestPolicyTest, SecFetchSiteCrossSiteRefusesAWriteEvenWithoutOrigin) {
  const RequestPolicy policy = Policy();
  const std::optional<std::string> refusal = policy.Check(
      Head("POST", {{"Host", "127.0.0.1:8787"}, {"Sec-Fetch-Site", "Cross-Site"}}));
  ASSERT_TRUE(refusal.has_value());
  EXPECT_NE(refusal->find("cross-site request refused"), std::string::npos);
  EXPECT_EQ(policy.Check(Head(
                "GET", {{"Host", "127.0.0.1:8787"}, {"Sec-Fetch-Site", "cross-site"}})),
            std::nullopt);
}

}  // namespace
}  // namespace sheetlog::api
