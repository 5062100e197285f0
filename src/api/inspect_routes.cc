#include "src/api/inspect_routes.h"

#include <algorithm>
#include <iterator>

#include "emulator/queue/queue.h"
#include "emulator/runtime/execution_history.h"
#include "emulator/runtime/function_runtime.h"
#include "src/api/json_input.h"
#include "src/api/pipeline_routes.h"
#include "src/api/request_params.h"
#include "src/app/table_browser.h"

namespace sheetlog::api {

// GET /v1/admin/queues/{name}/messages?limit=&after=: the queue's messages, oldest sent
// first, read without receiving them (no receipt, no visibility change, receive counts
// untouched).
void InspectRoutes::PeekMessages(Call& call) {
  QueueOptions queue = ExistingQueue(queues_, call.Path(1));
  const int limit = QueryLimit(call, 50, 1000);
  std::vector<DeadLetterMessage> messages =
      Check(queues_.ListDeadLetters(queue.name, limit, call.Query("after").value_or("")));
  json out = json::array();
  for (const DeadLetterMessage& m : messages) {
    out.push_back(json{
        {"id", m.id},
        {"body", m.body},
        {"receive_count", m.receive_count},
        {"sent_micros", m.sent_micros},
        {"last_error", m.last_error.empty() ? json(nullptr) : json(m.last_error)},
        {"source_queue", m.source_queue.empty() ? json(nullptr) : json(m.source_queue)}});
  }
  json next = nullptr;
  if (static_cast<int>(messages.size()) == limit) next = messages.back().id;
  call.Reply(200, json{{"queue", queue.name}, {"messages", out}, {"next", next}});
}

// POST /v1/admin/queues/{name}/messages {"body": string, "delay_s"?: 0..900}.
void InspectRoutes::SendMessage(Call& call) {
  if (!controls_.faults) {
    throw ApiError::Forbidden(
        "sending to the server's queues is a test control: start with --enable-faults");
  }
  QueueOptions queue = ExistingQueue(queues_, call.Path(1));
  json request = call.Body();
  FieldReader fields(request, "request body");
  std::optional<std::string> body = fields.String("body");
  std::optional<int64_t> delay_s = fields.Int("delay_s");
  fields.Finish();
  if (!body) throw ApiError::Validation("field 'body' (a string) is required");
  if (body->size() > QueueService::kMaxBodyBytes) {
    throw ApiError::Validation("field 'body' is longer than " +
                               std::to_string(QueueService::kMaxBodyBytes) + " bytes");
  }
  if (delay_s && (*delay_s < 0 || *delay_s > 900)) {
    throw ApiError::Validation("delay_s must be 0..900");
  }
  std::string id = Check(queues_.Send(queue.name, *body, delay_s));
  call.Reply(201, json{{"queue", queue.name}, {"id", id}});
}

// POST /v1/admin/queues/{name}/purge {}: SQS PurgeQueue.
void InspectRoutes::PurgeQueue(Call& call) {
  if (!controls_.reset) {
    throw ApiError::Forbidden("purging a queue is allowed only with --allow-reset");
  }
  QueueOptions queue = ExistingQueue(queues_, call.Path(1));
  json request = call.Body();
  FieldReader(request, "request body").Finish();
  int64_t purged = Check(queues_.Purge(queue.name));
  call.Reply(200, json{{"queue", queue.name}, {"purged", purged}});
}

namespace {

// The cursor of the invocation log: "<micros>:<sequence>:<key>" of the last
// invocation shown (keys may hold ':', so the key comes last).
std::string InvocationCursor(const ExecutionRow& row) {
  return std::to_string(row.created_at) + ":" + std::to_string(row.sequence) + ":" +
         row.partition_key;
}

void ReadInvocationCursor(const std::string& text, InvocationQuery* query) {
  const size_t first = text.find(':');
  const size_t second = first == std::string::npos ? first : text.find(':', first + 1);
  std::optional<int64_t> micros =
      first == std::string::npos ? std::nullopt : ParseInt(text.substr(0, first));
  std::optional<int64_t> sequence =
      second == std::string::npos ? std::nullopt
                                  : ParseInt(text.substr(first + 1, second - first - 1));
  if (!micros || !sequence) {
    throw ApiError::Validation(
        "query parameter 'before' must be a 'next' of this log, got '" + text + "'");
  }
  query->before_micros = *micros;
  query->before_sequence = *sequence;
  query->before_key = text.substr(second + 1);
}

}  // namespace

// GET /v1/admin/invocations?source=&status=&limit=&before=: newest first.
void InspectRoutes::ListInvocations(Call& call) {
  InvocationQuery query;
  query.limit = QueryLimit(call, 100, 1000);
  query.source = call.Query("source").value_or("");
  if (auto status = call.Query("status")) {
    query.status = ParseExecStatus(*status);
    if (!query.status) {
      throw ApiError::Validation(
          "status must be started, succeeded, failed or deferred, got '" + *status + "'");
    }
  }
  if (auto before = call.Query("before")) ReadInvocationCursor(*before, &query);
  std::vector<Invocation> page = Check(runtime_.history().ListInvocations(query));
  json out = json::array();
  for (const Invocation& invocation : page) {
    const ExecutionRow& row = invocation.row;
    const bool outcome = row.status != ExecStatus::kStarted;
    json item{{"key", row.partition_key},
              {"sequence", row.sequence},
              {"source", row.source},
              {"status", ExecStatusText(row.status)},
              {"at_micros", row.created_at},
              {"started_micros",
               outcome ? (invocation.started_micros ? json(*invocation.started_micros)
                                                    : json(nullptr))
                       : json(row.created_at)},
              {"duration_ms", nullptr},
              {"error", row.error.empty() ? json(nullptr) : json(row.error)},
              {"invocation_id", row.invocation_id},
              {"detail", row.detail.empty() ? json(nullptr) : json(row.detail)}};
    if (outcome && invocation.started_micros) {
      item["duration_ms"] =
          static_cast<double>(row.created_at - *invocation.started_micros) / 1000.0;
    }
    out.push_back(std::move(item));
  }
  json next = nullptr;
  if (static_cast<int>(page.size()) == query.limit) {
    next = InvocationCursor(page.back().row);
  }
  call.Reply(200, json{{"invocations", out}, {"next", next}});
}

namespace {

json ValueJson(const Value& value) {
  switch (value.type()) {
    case Value::Type::kNull:
      return nullptr;
    case Value::Type::kInt:
      return value.AsInt();
    case Value::Type::kDouble:
      return value.AsDouble();
    case Value::Type::kString:
      return value.AsString();
    case Value::Type::kBytes: {
      static constexpr char kHex[] = "0123456789abcdef";
      std::string hex;
      for (unsigned char byte : value.AsString()) {
        hex += kHex[byte >> 4];
        hex += kHex[byte & 15];
      }
      return json{{"bytes", hex}};
    }
    case Value::Type::kBool:
      return value.AsBool();
  }
  return nullptr;
}

// The key values of a `partition` or `start` parameter: a JSON array of strings and
// integers.
std::vector<std::string> KeyTexts(const std::string& name, const std::string& text) {
  Result<json> parsed = ParseJsonStrict(text);
  if (!parsed.ok() || !parsed->is_array()) {
    throw ApiError::Validation("query parameter '" + name +
                               "' must be a JSON array of key values, got '" + text +
                               "'");
  }
  std::vector<std::string> out;
  for (const json& v : *parsed) {
    if (v.is_string()) {
      out.push_back(v.get<std::string>());
    } else if (v.is_number_integer()) {
      out.push_back(std::to_string(v.get<int64_t>()));
    } else {
      throw ApiError::Validation("query parameter '" + name +
                                 "' holds only strings and integers");
    }
  }
  return out;
}

// A FilterExpression term on one attribute, applied to the items of a page after the
// read (as DynamoDB does: `limit` counts the items read).
struct ItemFilter {
  std::string attribute;
  std::string op;  // eq, ne, contains, begins_with, exists, not_exists
  std::string value;

  bool Keeps(const json& item) const {
    if (attribute.empty()) return true;
    const bool present = item.contains(attribute) && !item[attribute].is_null();
    if (op == "exists") return present;
    if (op == "not_exists") return !present;
    if (!present) return op == "ne";
    const json& v = item[attribute];
    const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    if (op == "eq") return text == value;
    if (op == "ne") return text != value;
    if (op == "contains") return text.find(value) != std::string::npos;
    return text.rfind(value, 0) == 0;  // begins_with
  }
};

ItemFilter ReadFilter(Call& call) {
  ItemFilter filter;
  filter.attribute = call.Query("filter").value_or("");
  filter.op = call.Query("op").value_or("eq");
  filter.value = call.Query("value").value_or("");
  static const char* kOps[] = {"eq",          "ne",     "contains",
                               "begins_with", "exists", "not_exists"};
  if (std::find(std::begin(kOps), std::end(kOps), filter.op) == std::end(kOps)) {
    throw ApiError::Validation(
        "op must be eq, ne, contains, begins_with, exists or not_exists, got '" +
        filter.op + "'");
  }
  return filter;
}

}  // namespace

// GET /v1/admin/tables
void InspectRoutes::ListTables(Call& call) {
  json out = json::array();
  for (const BrowsableTable& t : TableBrowser::Tables()) {
    const TableSchema& schema = t.table->schema();
    json attributes = json::array();
    for (const Attribute& a : schema.attributes) attributes.push_back(a.column);
    out.push_back(json{{"name", t.name},
                       {"description", t.description},
                       {"partition_key", schema.partition_key},
                       {"sort_key", schema.sort_key},
                       {"attributes", attributes}});
  }
  call.Reply(200, json{{"tables", out}});
}

// GET /v1/admin/tables/{name}/items?partition=[..]&from=&to=&order=asc|desc&limit=
//     &start=[..]&filter=<attribute>&op=&value=
void InspectRoutes::BrowseItems(Call& call) {
  BrowseRequest request;
  request.table = call.Path(1);
  if (auto partition = call.Query("partition")) {
    request.partition = KeyTexts("partition", *partition);
    if (request.partition.empty()) {
      throw ApiError::Validation("query parameter 'partition' must not be empty");
    }
  }
  request.sort_from = call.Query("from");
  request.sort_to = call.Query("to");
  const std::string order = call.Query("order").value_or("asc");
  if (order != "asc" && order != "desc") {
    throw ApiError::Validation("order must be asc or desc, got '" + order + "'");
  }
  request.forward = order == "asc";
  request.limit = QueryLimit(call, 50, 1000);
  if (auto start = call.Query("start")) request.start = KeyTexts("start", *start);
  const ItemFilter filter = ReadFilter(call);
  Result<BrowsePage> page = tables_.Browse(request, &call.meter);
  if (page.status().IsNotFound()) throw ApiError::NotFound(page.status().message());
  BrowsePage result = Check(std::move(page));
  json items = json::array();
  int64_t scanned = 0;
  for (const Item& item : result.items) {
    ++scanned;
    json out = json::object();
    for (const auto& [column, value] : item) out[column] = ValueJson(value);
    if (filter.Keeps(out)) items.push_back(std::move(out));
  }
  json next = nullptr;
  if (result.next) {
    next = json::array();
    for (const Value& v : *result.next) next.push_back(ValueJson(v));
  }
  call.Reply(200, json{{"table", request.table},
                       {"items", items},
                       {"scanned", scanned},
                       {"next", next}});
}

void InspectRoutes::AddTo(Router& router) {
  const RouteOptions admin_storage{/*auth=*/true, /*storage=*/true};
  AddRoutes<InspectRoutes>(
      router, this,
      {
          {"GET", R"(/v1/admin/queues/([^/]+)/messages)", &InspectRoutes::PeekMessages,
           kUnmeteredRoute},
          {"POST", R"(/v1/admin/queues/([^/]+)/messages)", &InspectRoutes::SendMessage,
           kUnmeteredRoute},
          {"POST", R"(/v1/admin/queues/([^/]+)/purge)", &InspectRoutes::PurgeQueue,
           kUnmeteredRoute},
          {"GET", "/v1/admin/invocations", &InspectRoutes::ListInvocations,
           kUnmeteredRoute},
          {"GET", "/v1/admin/tables", &InspectRoutes::ListTables, kUnmeteredRoute},
          {"GET", R"(/v1/admin/tables/([^/]+)/items)", &InspectRoutes::BrowseItems,
           admin_storage},
      });
}

}  // namespace sheetlog::api
