// Routes of the event streams (Server-Sent Events): GET /v1/sheets/{id}/events and
// GET /v1/admin/events. They decide where a stream starts; the streams themselves are
// the EventStreams service's (event_streams.h).
#pragma once

#include "src/api/event_streams.h"
#include "src/api/router.h"

namespace sheetlog {
class EventLog;
class PipelineEvents;
}  // namespace sheetlog

namespace sheetlog::api {

class LiveUpdateRoutes : public RouteGroup {
 public:
  LiveUpdateRoutes(EventLog* log, PipelineEvents* journal, EventStreams* streams)
      : log_(*log), journal_(*journal), streams_(*streams) {}

  void AddTo(Router& router) override;

  void SheetEvents(Call& call);  // GET /v1/sheets/{id}/events
  void AdminEvents(Call& call);  // GET /v1/admin/events

 private:
  EventLog& log_;
  PipelineEvents& journal_;
  EventStreams& streams_;
};

}  // namespace sheetlog::api
