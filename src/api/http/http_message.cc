#include "src/api/http/http_message.h"

#include <strings.h>

#include "src/api/http/response_channel.h"

namespace sheetlog::api::http {

bool CaseInsensitiveLess::operator()(const std::string& a, const std::string& b) const {
  return strcasecmp(a.c_str(), b.c_str()) < 0;
}

bool Request::has_header(const std::string& name) const {
  return headers.find(name) != headers.end();
}

std::string Request::get_header_value(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

bool Request::has_param(const std::string& name) const {
  return params.find(name) != params.end();
}

std::string Request::get_param_value(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? "" : it->second;
}

void Response::set_header(const std::string& name, const std::string& value) {
  headers.erase(name);
  headers.emplace(name, value);
}

bool Response::has_header(const std::string& name) const {
  return headers.find(name) != headers.end();
}

std::string Response::get_header_value(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

void Response::set_content(std::string content, const std::string& content_type) {
  body = std::move(content);
  body_kind = BodyKind::kString;
  set_header("Content-Type", content_type);
}

void Response::set_content_provider(size_t length, const std::string& content_type,
                                    ContentProvider provider) {
  body.clear();
  body_kind = BodyKind::kSized;
  content_length = length;
  sized_provider = std::move(provider);
  set_header("Content-Type", content_type);
}

void Response::set_chunked_content_provider(const std::string& content_type,
                                            ChunkedContentProvider provider) {
  body.clear();
  body_kind = BodyKind::kChunked;
  chunked_provider = std::move(provider);
  set_header("Content-Type", content_type);
}

std::shared_ptr<StreamWriter> Response::StartStream(const std::string& content_type,
                                                    size_t buffer_limit) {
  body.clear();
  body_kind = BodyKind::kStream;
  stream = std::make_shared<ResponseChannel>(buffer_limit);
  set_header("Content-Type", content_type);
  set_header("Cache-Control", "no-cache");
  return stream;
}

std::shared_ptr<ResponseSender> Response::Defer() {
  deferred = std::make_shared<ResponseSender>();
  return deferred;
}

ResponseSender::~ResponseSender() {
  // No lock: the last owner is going away, so no other thread can Send or Attach.
  if (!sent_ && deliver_) deliver_(std::nullopt);
}

void ResponseSender::Send(Response response) {
  Deliver deliver;
  {
    MutexLock lock(&mu_);
    if (sent_) return;
    sent_ = true;
    if (!deliver_) {
      early_ = std::move(response);
      return;
    }
    deliver = deliver_;
  }
  deliver(std::move(response));
}

void ResponseSender::Attach(Deliver deliver) {
  std::optional<Response> early;
  {
    MutexLock lock(&mu_);
    deliver_ = deliver;
    early.swap(early_);
  }
  if (early) deliver(std::move(early));
}

const char* StatusReason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Range Not Satisfiable";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    case 507:
      return "Insufficient Storage";
    default:
      return "Unknown";
  }
}

}  // namespace sheetlog::api::http
