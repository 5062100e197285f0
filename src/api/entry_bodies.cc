// Entry bodies: validation at append time, and bodies too large to keep inline.
#include "src/api/routes.h"
#include "src/app/app.h"
#include "src/log/tables.h"
#include "src/sheet/sheet_edit.h"

namespace sheetlog::api {

void PrepareEntryBody(App& app, const std::string& type, int64_t version,
                      const json& body, AppendRequest* request, UnitMeter* meter) {
  (void)app;
  (void)meter;
  // Built-in types must parse now: a bad body is a 400 here, never a failure later in
  // the snapshot pipeline.
  Check(ValidateAppend(type, version, body));
  if (!body.is_null()) request->body = body.dump();
}

Result<AppendResult> AppendPrepared(App& app, AppendRequest request, UnitMeter* meter,
                                    int64_t* next_seq_out) {
  if (request.body &&
      static_cast<int64_t>(request.body->size()) > app.options().inline_limit) {
    // Seed 001's break-even: larger bodies are cheaper in the blob store.
    return app.uploads()->AppendLarge(std::move(request), meter, next_seq_out);
  }
  return app.log()->AddEntry(request, meter, next_seq_out);
}

Uploads::Validator CompletionValidator(App& app) {
  (void)app;
  return {};
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

}  // namespace sheetlog::api
