// Routes of api.md "Blob store" (the S3 stand-in: objects, tags, listing, presigned
// access) and "Large entries" (seed 000's uploads), and the lifecycle sweep.
#pragma once

#include <string>

#include "src/api/router.h"

namespace sheetlog {
class BlobStore;
class LifecycleSweeper;
class SheetPurger;
class Uploads;
}  // namespace sheetlog

namespace sheetlog::api {

class BlobRoutes : public RouteGroup {
 public:
  // `router` checks the bearer token of requests that are not presigned.
  BlobRoutes(const Router* router, BlobStore* blobs, Uploads* uploads,
             LifecycleSweeper* sweeper, SheetPurger* purger)
      : router_(*router),
        blobs_(*blobs),
        uploads_(*uploads),
        sweeper_(*sweeper),
        purger_(*purger) {}

  void AddTo(Router& router) override;

  // PUT /v1/blobs/{key} (?tagging: the object's tags), streamed to the store.
  void PutBlob(Call& call, const http::ContentReader& reader);
  void GetBlob(Call& call);         // GET /v1/blobs/{key} (?tagging), Range requests
  void DeleteBlob(Call& call);      // DELETE /v1/blobs/{key}
  void ListBlobs(Call& call);       // GET /v1/blobs
  void CreateUpload(Call& call);    // POST /v1/sheets/{id}/uploads
  void CompleteUpload(Call& call);  // POST /v1/sheets/{id}/uploads/{upload}/complete
  void Sweep(Call& call);           // POST /v1/admin/sweep

 private:
  // A presigned request carries ?expires=&signature=; anything else needs the token.
  // Returns true if the request is presigned (and valid for `method`).
  bool CheckAccess(Call& call, const std::string& method, const std::string& key);

  const Router& router_;
  BlobStore& blobs_;
  Uploads& uploads_;
  LifecycleSweeper& sweeper_;
  SheetPurger& purger_;
};

}  // namespace sheetlog::api
