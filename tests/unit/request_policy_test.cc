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

TEST(RequestPolicyTest, ANamedListenHostIsAllowedOnAnyPort) {
  RequestPolicy policy("Sheets.Internal", {});
  policy.set_port(8787);
  EXPECT_EQ(policy.Check(Head("GET", {{"Host", "sheets.internal:8787"}})), std::nullopt);
  EXPECT_EQ(policy.Check(Head("GET", {{"Host", "SHEETS.INTERNAL"}})), std::nullopt);
  EXPECT_TRUE(policy.Check(Head("GET", {{"Host", "other.internal:8787"}})).has_value());
}

TEST(RequestPolicyTest, AnAllowedHostWithAPortMatchesThatPortAndAbsentMeansEighty) {
  const RequestPolicy policy("127.0.0.1", {"plain.example:80", "tls.example:443"});
  EXPECT_EQ(policy.Check(Head("GET", {{"Host", "plain.example"}})), std::nullopt);
  EXPECT_EQ(policy.Check(Head("GET", {{"Host", "plain.example:80"}})), std::nullopt);
  EXPECT_TRUE(policy.Check(Head("GET", {{"Host", "plain.example:8080"}})).has_value());
  EXPECT_EQ(policy.Check(Head("GET", {{"Host", "tls.example:443"}})), std::nullopt);
  EXPECT_TRUE(policy.Check(Head("GET", {{"Host", "tls.example"}})).has_value());
}

TEST(RequestPolicyTest, AMalformedOrEmptyHostIsRefused) {
  const RequestPolicy policy = Policy();
  for (const char* host :
       {"", ":8787", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:123456", "127.0.0.1:-1",
        "127.0.0.1:8787:1", "[::1", "[::1]8787", "[::1]:", "localhost:+80"}) {
    const std::optional<std::string> refusal =
        policy.Check(Head("GET", {{"Host", host}}));
    ASSERT_TRUE(refusal.has_value()) << "'" << host << "'";
    EXPECT_NE(refusal->find("DNS rebinding"), std::string::npos) << *refusal;
  }
}

TEST(RequestPolicyTest, AHostRefusalSaysWhichAddressToUse) {
  const RequestPolicy policy = Policy();
  const std::optional<std::string> refusal = policy.Check(Head(
      "POST", {{"Host", "evil.example:8787"}, {"Origin", "http://evil.example:8787"}}));
  ASSERT_TRUE(refusal.has_value());
  // The Host check comes first, so the message is about the address, not the origin.
  EXPECT_NE(refusal->find("Host 'evil.example:8787' is not an address of this server"),
            std::string::npos)
      << *refusal;
  EXPECT_NE(refusal->find("http://127.0.0.1:8787/"), std::string::npos) << *refusal;
  EXPECT_NE(refusal->find("--allowed-host evil.example:8787"), std::string::npos)
      << *refusal;
}

TEST(RequestPolicyTest, AnOriginMustBeExactlyThisServersOwn) {
  const RequestPolicy policy = Policy();
  for (const char* origin :
       {"http://127.0.0.1:8787/", "http://127.0.0.1", "null", "ftp://127.0.0.1:8787",
        "127.0.0.1:8787", "http://localhost:8787", ""}) {
    const std::optional<std::string> refusal =
        policy.Check(Head("PUT", {{"Host", "127.0.0.1:8787"}, {"Origin", origin}}));
    ASSERT_TRUE(refusal.has_value()) << "'" << origin << "'";
    EXPECT_NE(refusal->find("is not this server's origin (http://127.0.0.1:8787)"),
              std::string::npos)
        << *refusal;
  }
  // A write with an Origin but no Host at all: the message names the bound address.
  const std::optional<std::string> refusal =
      policy.Check(Head("DELETE", {{"Origin", "http://127.0.0.1:8787"}}));
  ASSERT_TRUE(refusal.has_value());
  EXPECT_NE(refusal->find("(http://127.0.0.1:8787)"), std::string::npos) << *refusal;
}

TEST(RequestPolicyTest, SecFetchSiteOtherThanCrossSiteDoesNotRefuse) {
  const RequestPolicy policy = Policy();
  for (const char* site : {"same-origin", "same-site", "none"}) {
    EXPECT_EQ(policy.Check(
                  Head("POST", {{"Host", "127.0.0.1:8787"}, {"Sec-Fetch-Site", site}})),
              std::nullopt)
        << site;
  }
  // Cross-site is refused even with this server's own Origin.
  EXPECT_TRUE(policy
                  .Check(Head("POST", {{"Host", "127.0.0.1:8787"},
                                       {"Origin", "http://127.0.0.1:8787"},
                                       {"Sec-Fetch-Site", "cross-site"}}))
                  .has_value());
}

}  // namespace
}  // namespace sheetlog::api
