// A route group's table (src/api/router.h, AddRoutes): each row reaches its member, in
// the order of the table, with its options; and the router's one error path turns what
// a handler throws into the api.md error reply.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "src/api/router.h"

namespace sheetlog::api {
namespace {

// A group whose handlers say which one ran, or throw.
class EchoRoutes : public RouteGroup {
 public:
  void AddTo(Router& router) override {
    AddRoutes<EchoRoutes>(
        router, this,
        {
            {"GET", "/things", &EchoRoutes::ListThings, kOpenRoute},
            {"GET", R"(/things/(\d+))", &EchoRoutes::GetThing, kOpenRoute},
            // Never reached: the row above matches first.
            {"GET", R"(/things/([^/]+))", &EchoRoutes::Unreachable, kOpenRoute},
            {"POST", "/things", &EchoRoutes::RefuseThing},
            {"DELETE", R"(/things/(\d+))", &EchoRoutes::Crash, kOpenRoute},
            {"PUT", "/things/aborted", &EchoRoutes::Abort},
            {"PUT", "/things/unavailable", &EchoRoutes::BeUnavailable},
        });
  }

  void ListThings(Call& call) { call.Reply(200, json{{"ran", "list"}}); }
  void GetThing(Call& call) { call.Reply(200, json{{"ran", "get " + call.Path(1)}}); }
  void Unreachable(Call& call) { call.Reply(200, json{{"ran", "unreachable"}}); }
  void RefuseThing(Call&) { throw ApiError::Conflict("no more things"); }
  void Crash(Call&) { throw std::runtime_error("the thing broke"); }
  // A store's transaction aborted by concurrency after its runner's retries
  // (status.h), as a handler's Check meets it.
  void Abort(Call&) { Check(Aborted("deadlock detected")); }
  void BeUnavailable(Call&) { Check(Unavailable("the database is restarting")); }
};

struct Served {
  int status = 0;
  json body;
  std::string units;        // X-Request-Units
  std::string retry_after;  // Retry-After
};

Served Serve(const Router& router, const std::string& method, const std::string& path,
             const std::string& token = "") {
  http::Request request;
  request.method = method;
  request.path = path;
  request.target = path;
  if (!token.empty()) request.headers.emplace("Authorization", "Bearer " + token);
  http::Admission admission = router.Admit(request);
  http::Response response;
  if (admission.refusal) {
    response = std::move(*admission.refusal);
  } else {
    router.Handle(admission.route, request, response, nullptr);
  }
  return Served{response.status, json::parse(response.body, nullptr, false),
                response.get_header_value("X-Request-Units"),
                response.get_header_value("Retry-After")};
}

TEST(RouteTableTest, EachRowReachesItsMemberAndTheFirstMatchingRowWins) {
  Router router("", nullptr);
  EchoRoutes group;
  group.AddTo(router);
  EXPECT_EQ(Serve(router, "GET", "/things").body["ran"], "list");
  EXPECT_EQ(Serve(router, "GET", "/things/42").body["ran"], "get 42");
  Served other = Serve(router, "GET", "/things/abc");
  EXPECT_EQ(other.body["ran"], "unreachable");  // not digits: the third row
  EXPECT_EQ(Serve(router, "PUT", "/things").status, 404);
}

TEST(RouteTableTest, AnApiErrorIsItsReplyAndAnyOtherExceptionA500) {
  Router router("", nullptr);
  EchoRoutes group;
  group.AddTo(router);
  Served refused = Serve(router, "POST", "/things");
  EXPECT_EQ(refused.status, 409);
  EXPECT_EQ(refused.body["error"]["code"], "ConflictError");
  EXPECT_EQ(refused.body["error"]["message"], "no more things");
  // The default options: a storage route reports its units, errors too.
  EXPECT_EQ(refused.units, "wru=0, rru=0");
  Served crashed = Serve(router, "DELETE", "/things/7");
  EXPECT_EQ(crashed.status, 500);
  EXPECT_EQ(crashed.body["error"]["code"], "InternalError");
  EXPECT_EQ(crashed.body["error"]["message"], "unexpected failure: the thing broke");
  EXPECT_EQ(crashed.units, "");  // kOpenRoute: no units
}

// Aborted (a transaction aborted by concurrency: safe to run again) is api.md's 503
// Unavailable with Retry-After, never a 500; so is every other 503 a handler throws.
TEST(RouteTableTest, AnAbortedTransactionIsA503WithRetryAfter) {
  Router router("", nullptr);
  EchoRoutes group;
  group.AddTo(router);
  Served aborted = Serve(router, "PUT", "/things/aborted");
  EXPECT_EQ(aborted.status, 503);
  EXPECT_EQ(aborted.body["error"]["code"], "Unavailable");
  EXPECT_EQ(aborted.body["error"]["message"], "deadlock detected");
  EXPECT_EQ(aborted.retry_after, "1");
  EXPECT_EQ(aborted.units, "wru=0, rru=0");
  Served unavailable = Serve(router, "PUT", "/things/unavailable");
  EXPECT_EQ(unavailable.status, 503);
  EXPECT_EQ(unavailable.body["error"]["code"], "Unavailable");
  EXPECT_EQ(unavailable.retry_after, "1");
  // Other errors carry none.
  EXPECT_EQ(Serve(router, "POST", "/things").retry_after, "");
  EXPECT_EQ(Serve(router, "DELETE", "/things/7").retry_after, "");

  const ApiError mapped = ApiError::FromStatus(Aborted("could not serialize access"));
  EXPECT_EQ(mapped.http_status(), 503);
  EXPECT_EQ(mapped.code(), "Unavailable");
}

TEST(RouteTableTest, RowsKeepTheirOptionsTheDefaultNeedsTheToken) {
  Router router("secret", nullptr);
  EchoRoutes group;
  group.AddTo(router);
  EXPECT_EQ(Serve(router, "GET", "/things").status, 200);  // kOpenRoute
  Served unauthorized = Serve(router, "POST", "/things");
  EXPECT_EQ(unauthorized.status, 401);
  EXPECT_EQ(unauthorized.body["error"]["code"], "Unauthorized");
  EXPECT_EQ(Serve(router, "POST", "/things", "secret").status, 409);
}

}  // namespace
}  // namespace sheetlog::api
