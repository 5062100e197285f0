// The web console: its embedded files under /console/, with client-side
// routing (every page path without a file extension is the same index.html), and "/"
// redirecting there. The files need no token: the console asks for one and sends it
// with its own API calls, like any other client.
#pragma once

#include "src/api/router.h"

namespace sheetlog::api {

class ConsoleRoutes : public RouteGroup {
 public:
  void AddTo(Router& router) override;

  void RedirectToConsole(Call& call);  // GET / and GET /console
  void ServeFile(Call& call);          // GET /console/{path}
};

}  // namespace sheetlog::api
