#include "src/api/live_update_routes.h"

#include <algorithm>

#include "src/api/request_params.h"
#include "src/effects/pipeline_events.h"
#include "src/log/event_log.h"

namespace sheetlog::api {

void LiveUpdateRoutes::AddTo(Router& router) {
  AddRoutes<LiveUpdateRoutes>(
      router, this,
      {
          {"GET", R"(/v1/sheets/([^/]+)/events)", &LiveUpdateRoutes::SheetEvents,
           kUnmeteredRoute},
          {"GET", "/v1/admin/events", &LiveUpdateRoutes::AdminEvents, kUnmeteredRoute},
      });
}

void LiveUpdateRoutes::SheetEvents(Call& call) {
  const std::string id = SheetId(call);
  const int64_t next_seq = Check(log_.NextSeq(id, &call.meter));
  int64_t from = next_seq;
  const std::string last_event_id = call.req.get_header_value("Last-Event-ID");
  // A reconnect's Last-Event-ID wins: a browser's EventSource reconnects with
  // its original URL (`?from=` included) plus the header, and must resume after
  // the last entry it got rather than repeat everything from `from`.
  if (!last_event_id.empty()) {
    from = ParseSeq("Last-Event-ID", last_event_id) + 1;
  } else if (std::optional<std::string> text = call.Query("from")) {
    from = ParseSeq("from", *text);
  }
  if (from > next_seq) {
    throw ApiError::Range("from " + std::to_string(from) + " is past the next seq " +
                          std::to_string(next_seq));
  }
  streams_.OpenSheet(call, id, from);
}

void LiveUpdateRoutes::AdminEvents(Call& call) {
  // Where to start: a reconnect's Last-Event-ID (after it) wins over the URL's
  // `from` (that id on) or `after` (after it), as a browser's EventSource
  // reconnects with its original URL plus the header. "0" is the journal's
  // start; an id of another epoch (before a restart) starts there too, after
  // a `gap`. Default: live only.
  PipelineEvents* journal = &journal_;
  int64_t after = journal->last_number();
  std::optional<std::string> foreign;
  auto resolve = [&](const std::string& text, bool is_from) {
    if (text == "0") {
      after = 0;
    } else if (std::optional<int64_t> number = journal->ParseId(text)) {
      after = is_from ? std::max<int64_t>(*number - 1, 0) : *number;
    } else {
      after = 0;
      foreign = text;
    }
  };
  const std::string last_event_id = call.req.get_header_value("Last-Event-ID");
  if (!last_event_id.empty()) {
    resolve(last_event_id, false);
  } else if (std::optional<std::string> text = call.Query("from")) {
    resolve(*text, true);
  } else if (std::optional<std::string> text = call.Query("after")) {
    resolve(*text, false);
  }
  streams_.OpenAdmin(call, after, foreign);
}

}  // namespace sheetlog::api
