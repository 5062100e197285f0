// Entry bodies: validation at append time, and external (blob-stored) bodies.
#include "src/api/routes.h"
#include "src/app/app.h"
#include "src/log/tables.h"

namespace sheetlog::api {

void PrepareEntryBody(App& app, const std::string& type, int64_t version,
                      const json& body, AppendRequest* request, UnitMeter* meter) {
  (void)app;
  (void)type;
  (void)version;
  (void)meter;
  if (!body.is_null()) request->body = body.dump();
}

json ExternalJson(App& app, const std::string& key) {
  (void)app;
  return json{{"key", key}, {"size", nullptr}, {"url", nullptr}};
}

json InlineExternalBody(App& app, const EntryRecord& entry, UnitMeter* meter) {
  (void)app;
  (void)entry;
  (void)meter;
  return nullptr;
}

std::string ManifestUrl(App& app, const std::string& root) {
  (void)app;
  return "/v1/blobs/" + root;
}

int64_t PendingSnapshotCount(App& app, const std::string& sheet_id, UnitMeter* meter) {
  int64_t count = 0;
  Status status = app.db()->Read([&](Connection& conn) {
    QueryRequest query;
    query.partition = {sheet_id};
    ASSIGN_OR_RETURN(QueryResult page, PendingSnapshotTable().Query(conn, query, meter));
    count = static_cast<int64_t>(page.items.size());
    return Status::OK();
  });
  Check(status);
  return count;
}

void DeleteBlobsBestEffort(App& app, const std::vector<std::string>& keys) {
  (void)app;
  (void)keys;
}

}  // namespace sheetlog::api
