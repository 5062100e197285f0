#include "src/api/console_routes.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>

#include "src/api/console_assets.h"

namespace sheetlog::api {

namespace {

// The console loads nothing from anywhere else: scripts, styles, images and API calls
// all come from this server, and no page may frame it.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: "
    "blob:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

struct ServedAsset {
  const ConsoleAsset* asset;
  std::string etag;  // quoted, from the bytes: changes exactly when a build changes them
};

// FNV-1a: a fingerprint for ETags, not a security property.
std::string Fingerprint(std::string_view bytes) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 1099511628211ULL;
  }
  char text[24];
  std::snprintf(text, sizeof(text), "\"%016llx\"", static_cast<unsigned long long>(hash));
  return text;
}

const std::map<std::string_view, ServedAsset>& AssetsByPath() {
  static const std::map<std::string_view, ServedAsset> assets = [] {
    std::map<std::string_view, ServedAsset> out;
    for (const ConsoleAsset& asset : ConsoleAssets()) {
      out[asset.path] = ServedAsset{&asset, Fingerprint(asset.bytes)};
    }
    return out;
  }();
  return assets;
}

void Redirect(Call& call, const std::string& location) {
  call.res.status = 302;
  call.res.set_header("Location", location);
  call.res.set_header("Cache-Control", "no-store");
}

// A path under /console/ that names a page rather than a file: its last segment has no
// extension ("sheets/<id>", "pipeline", ""). Those all load index.html.
bool IsPagePath(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string last = slash == std::string::npos ? path : path.substr(slash + 1);
  return last.find('.') == std::string::npos;
}

void ServeAsset(Call& call, const ServedAsset& served) {
  call.res.set_header("Cache-Control", "no-cache");  // revalidate: cheap with the ETag
  call.res.set_header("ETag", served.etag);
  call.res.set_header("X-Content-Type-Options", "nosniff");
  call.res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  call.res.set_header("Referrer-Policy", "no-referrer");
  if (call.req.get_header_value("If-None-Match") == served.etag) {
    call.res.status = 304;
    return;
  }
  call.res.status = 200;
  call.res.set_content(std::string(served.asset->bytes),
                       std::string(served.asset->content_type));
}

}  // namespace

void ConsoleRoutes::AddTo(Router& router) {
  AddRoutes<ConsoleRoutes>(
      router, this,
      {
          {"GET", "/", &ConsoleRoutes::RedirectToConsole, kOpenRoute},
          {"GET", "/console", &ConsoleRoutes::RedirectToConsole, kOpenRoute},
          {"GET", R"(/console/(.*))", &ConsoleRoutes::ServeFile, kOpenRoute},
      });
}

void ConsoleRoutes::RedirectToConsole(Call& call) { Redirect(call, "/console/"); }

void ConsoleRoutes::ServeFile(Call& call) {
  const std::string path = call.Path(1);
  const auto& assets = AssetsByPath();
  auto found = assets.find(path);
  if (found == assets.end() && IsPagePath(path)) found = assets.find("index.html");
  if (found == assets.end()) {
    throw ApiError::NotFound("no console file '" + path + "'");
  }
  ServeAsset(call, found->second);
}

}  // namespace sheetlog::api
