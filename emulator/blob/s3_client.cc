#include "emulator/blob/s3_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>

#include "emulator/blob/s3_xml.h"

namespace sheetlog {

namespace {

// curl_global_init once per process, before the first handle (it is not thread-safe).
void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Trim(std::string_view text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

std::string Unquote(std::string etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return etag;
}

// "%41" -> "A" for query values of the s3:// URL.
std::string PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out.push_back(
          static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

Result<int64_t> PositiveParameter(const std::string& name, const std::string& value) {
  char* end = nullptr;
  long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || parsed <= 0) {
    return InvalidArgument("" + name + " must be a positive integer, not '" + value +
                           "'");
  }
  return static_cast<int64_t>(parsed);
}

// aws_access_key_id / aws_secret_access_key / aws_session_token of the AWS
// shared-credentials format (the first profile that has them).
Status ReadCredentialsFile(const std::string& path, SigV4Credentials* out) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("cannot read credentials_file " + path);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string name = Lower(Trim(line.substr(0, eq)));
    std::string value = Trim(line.substr(eq + 1));
    if (name == "aws_access_key_id" && out->access_key_id.empty()) {
      out->access_key_id = value;
    } else if (name == "aws_secret_access_key" && out->secret_access_key.empty()) {
      out->secret_access_key = value;
    } else if (name == "aws_session_token" && out->session_token.empty()) {
      out->session_token = value;
    }
  }
  if (out->access_key_id.empty() || out->secret_access_key.empty()) {
    return InvalidArgument("credentials_file " + path +
                           " has no aws_access_key_id and aws_secret_access_key");
  }
  return Status::OK();
}

// The canonical query string SigV4 wants (and libcurl 7.88 signs as given).
std::string CanonicalQuery(const std::map<std::string, std::string>& query) {
  std::map<std::string, std::string> encoded;
  for (const auto& [name, value] : query) {
    encoded[SigV4UriEncode(name, false)] = SigV4UriEncode(value, false);
  }
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out += '&';
    out += name + "=" + value;
  }
  return out;
}

std::string Base64Md5(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_md5(), nullptr);
  unsigned char encoded[64];
  int n = EVP_EncodeBlock(encoded, digest, static_cast<int>(length));
  return std::string(reinterpret_cast<const char*>(encoded), n);
}

int64_t ParseHttpDate(const std::string& text) {
  if (text.empty()) return 0;
  time_t t = curl_getdate(text.c_str(), nullptr);
  return t < 0 ? 0 : static_cast<int64_t>(t);
}

// "2026-01-01T00:00:00.000Z" (ListObjectsV2's LastModified).
int64_t ParseIsoDate(const std::string& text) {
  std::tm tm{};
  if (sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
             &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm));
}

}  // namespace

std::string S3TaggingQuery(const std::map<std::string, std::string>& tags) {
  std::string out;
  for (const auto& [name, value] : tags) {
    if (!out.empty()) out += '&';
    out += SigV4UriEncode(name, false) + "=" + SigV4UriEncode(value, false);
  }
  return out;
}

Result<S3Location> ParseS3Url(std::string_view url) {
  constexpr std::string_view kScheme = "s3://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgument("must be an s3:// URL (s3://BUCKET?endpoint=...)");
  }
  url.remove_prefix(kScheme.size());
  size_t question = url.find('?');
  S3Location location;
  location.bucket = std::string(url.substr(0, question));
  if (location.bucket.empty() || location.bucket.find('/') != std::string::npos) {
    return InvalidArgument("s3://BUCKET needs a bucket name (no '/')");
  }
  std::string credentials_file;
  std::string_view query =
      question == std::string_view::npos ? std::string_view() : url.substr(question + 1);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string name(pair.substr(0, eq));
    std::string value =
        eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1));
    if (name == "endpoint") {
      location.endpoint = value;
    } else if (name == "region") {
      location.region = value;
    } else if (name == "connect_timeout_ms") {
      ASSIGN_OR_RETURN(location.connect_timeout_ms, PositiveParameter(name, value));
    } else if (name == "request_timeout_ms") {
      ASSIGN_OR_RETURN(location.request_timeout_ms, PositiveParameter(name, value));
    } else if (name == "stall_timeout_ms") {
      ASSIGN_OR_RETURN(location.stall_timeout_ms, PositiveParameter(name, value));
    } else if (name == "part_bytes") {
      ASSIGN_OR_RETURN(location.part_bytes, PositiveParameter(name, value));
      if (location.part_bytes < (5 << 20)) {
        return InvalidArgument(
            "part_bytes must be at least 5 MiB (S3's "
            "smallest multipart part)");
      }
    } else if (name == "tagging") {
      if (value != "on" && value != "off") {
        return InvalidArgument("tagging must be on or off");
      }
      location.store_tags = value == "on";
    } else if (name == "credentials_file") {
      credentials_file = value;
    } else if (name == "access_key" || name == "secret_key" ||
               name == "aws_access_key_id" || name == "aws_secret_access_key") {
      return InvalidArgument(
          "credentials never go on the command line: set "
          "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or use "
          "credentials_file=PATH");
    } else {
      return InvalidArgument("unknown parameter '" + name + "'");
    }
  }
  if (location.endpoint.rfind("http://", 0) != 0 &&
      location.endpoint.rfind("https://", 0) != 0) {
    return InvalidArgument("endpoint=http://host:port (or https://) is required");
  }
  while (!location.endpoint.empty() && location.endpoint.back() == '/') {
    location.endpoint.pop_back();
  }
  if (!credentials_file.empty()) {
    RETURN_IF_ERROR(ReadCredentialsFile(credentials_file, &location.credentials));
  } else {
    const char* id = std::getenv("AWS_ACCESS_KEY_ID");
    const char* secret = std::getenv("AWS_SECRET_ACCESS_KEY");
    const char* token = std::getenv("AWS_SESSION_TOKEN");
    if (id == nullptr || secret == nullptr || *id == '\0' || *secret == '\0') {
      return InvalidArgument(
          "no credentials: set AWS_ACCESS_KEY_ID and "
          "AWS_SECRET_ACCESS_KEY, or credentials_file=PATH");
    }
    location.credentials = {id, secret, token == nullptr ? "" : token};
  }
  return location;
}

struct S3Client::Request {
  std::string method = "GET";
  std::string key;  // empty: the bucket itself
  std::map<std::string, std::string> query;
  std::vector<std::string> headers;
  std::string_view body;
  bool has_body = false;
  // Object bodies stream under the stall rule instead of the total timeout.
  bool object_body = false;
  const std::function<Status(std::string_view)>* sink = nullptr;
  std::string what;  // "PUT key", for messages
};

struct S3Client::Response {
  long status = 0;
  std::string body;                            // unless a sink took it (2xx)
  std::map<std::string, std::string> headers;  // lowercase names
};

S3Client::S3Client(S3Location location) : location_(std::move(location)) {
  InitCurlOnce();
  size_t colon = location_.endpoint.find("://");
  scheme_ = location_.endpoint.substr(0, colon);
  host_ = location_.endpoint.substr(colon + 3);
}

S3Client::~S3Client() {
  MutexLock lock(&mu_);
  for (void* handle : idle_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

void* S3Client::AcquireHandle() {
  {
    MutexLock lock(&mu_);
    if (!idle_.empty()) {
      void* handle = idle_.back();
      idle_.pop_back();
      return handle;
    }
  }
  return curl_easy_init();
}

void S3Client::ReleaseHandle(void* handle) {
  MutexLock lock(&mu_);
  if (idle_.size() < 16) {
    idle_.push_back(handle);
    return;
  }
  curl_easy_cleanup(static_cast<CURL*>(handle));
}

std::string S3Client::ObjectPath(const std::string& key) const {
  std::string path = "/" + SigV4UriEncode(location_.bucket, false);
  if (!key.empty()) path += "/" + SigV4UriEncode(key, true);
  return path;
}

namespace {

struct Transfer {
  CURL* curl = nullptr;
  std::string_view upload;
  size_t uploaded = 0;
  const std::function<Status(std::string_view)>* sink = nullptr;
  Status sink_status;
  std::string* body = nullptr;
  std::map<std::string, std::string>* headers = nullptr;

  static size_t Read(char* buffer, size_t size, size_t count, void* data) {
    auto* t = static_cast<Transfer*>(data);
    size_t n = std::min(size * count, t->upload.size() - t->uploaded);
    std::copy_n(t->upload.data() + t->uploaded, n, buffer);
    t->uploaded += n;
    return n;
  }

  static size_t Write(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t n = size * count;
    long status = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
    if (t->sink != nullptr && status >= 200 && status < 300) {
      t->sink_status = (*t->sink)(std::string_view(data, n));
      return t->sink_status.ok() ? n : 0;
    }
    if (t->body->size() < (4 << 20)) t->body->append(data, n);
    return n;
  }

  static size_t Header(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::string_view line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {
      t->headers->clear();  // a new response (after 100 Continue)
    } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
      (*t->headers)[Lower(line.substr(0, colon))] = Trim(line.substr(colon + 1));
    }
    return size * count;
  }
};

}  // namespace

Result<S3Client::Response> S3Client::Send(const Request& request) {
  CURL* curl = static_cast<CURL*>(AcquireHandle());
  if (curl == nullptr) return Internal("curl_easy_init failed");
  curl_easy_reset(curl);
  Response response;
  Transfer transfer;
  transfer.curl = curl;
  transfer.upload = request.body;
  transfer.sink = request.sink;
  transfer.body = &response.body;
  transfer.headers = &response.headers;

  std::string url = location_.endpoint + ObjectPath(request.key);
  std::string query = CanonicalQuery(request.query);
  if (!query.empty()) url += "?" + query;
  const std::string sigv4 = "aws:amz:" + location_.region + ":s3";
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  if (!location_.credentials.session_token.empty()) {
    headers = curl_slist_append(
        headers,
        ("x-amz-security-token: " + location_.credentials.session_token).c_str());
  }
  for (const std::string& header : request.headers) {
    headers = curl_slist_append(headers, header.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(curl, CURLOPT_USERNAME, location_.credentials.access_key_id.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD,
                   location_.credentials.secret_access_key.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(location_.connect_timeout_ms));
  if (request.object_body) {
    // At least 1 KiB/s over the stall timeout, however long the body.
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(
        curl, CURLOPT_LOW_SPEED_TIME,
        std::max<long>(1, static_cast<long>(location_.stall_timeout_ms / 1000)));
  } else {
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(location_.request_timeout_ms));
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Transfer::Write);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Transfer::Header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, &Transfer::Read);
    curl_easy_setopt(curl, CURLOPT_READDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  } else if (request.method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  } else if (request.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  CURLcode code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  curl_slist_free_all(headers);
  if (code != CURLE_OK) {
    // A failed transfer may leave the connection in any state: do not reuse it.
    curl_easy_cleanup(curl);
    if (code == CURLE_WRITE_ERROR && !transfer.sink_status.ok()) {
      return transfer.sink_status;
    }
    // The endpoint is the operator's to know, not a client's (Status::detail).
    return Unavailable("the object store is unreachable (" + request.what + ")")
        .WithDetail("the object store at " + location_.endpoint + ": " +
                    curl_easy_strerror(code));
  }
  ReleaseHandle(curl);
  return response;
}

Status S3Client::ErrorOf(const Request& request, const Response& response) const {
  std::string code;
  std::string message;
  if (!response.body.empty()) {
    Result<std::unique_ptr<XmlElement>> xml = ParseXml(response.body);
    if (xml.ok()) {
      code = (*xml)->ChildText("Code");
      message = (*xml)->ChildText("Message");
    }
  }
  std::string text = "the object store answered " + std::to_string(response.status) +
                     (code.empty() ? "" : " " + code) + " to " + request.what +
                     (message.empty() ? "" : ": " + message);
  const long s = response.status;
  if (s == 404) return NotFound(text);
  if (s == 412) return ConditionFailed(text);
  if (s == 416) return OutOfRange(text);
  if (s == 403 || s == 401) return PermissionDenied(text);
  if (s >= 500 || s == 429 || s == 408) return Unavailable(text);
  return Internal(text);
}

Status S3Client::CheckBucket() {
  Request request;
  request.method = "HEAD";
  request.what = "HEAD bucket " + location_.bucket;
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status == 200) return Status::OK();
  if (response.status == 404) {
    return FailedPrecondition("the bucket " + location_.bucket + " does not exist at " +
                              location_.endpoint);
  }
  return ErrorOf(request, response);
}

Status S3Client::CreateBucket() {
  Request request;
  request.method = "PUT";
  request.has_body = true;
  request.what = "CreateBucket " + location_.bucket;
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status == 200 || response.status == 409) return Status::OK();
  return ErrorOf(request, response);
}

// The headers of a request that creates an object (PUT, CreateMultipartUpload): its
// content type and, where the store's own tags are written, its tags.
void S3Client::AddNewObjectHeaders(const std::string& content_type,
                                   const std::map<std::string, std::string>& tags,
                                   Request* request) const {
  request->headers.push_back("Content-Type: " + content_type);
  if (location_.store_tags && !tags.empty()) {
    request->headers.push_back("x-amz-tagging: " + S3TaggingQuery(tags));
  }
}

Result<std::string> S3Client::PutObject(const std::string& key, std::string_view body,
                                        const std::string& content_type,
                                        const std::map<std::string, std::string>& tags,
                                        const std::vector<std::string>& extra_headers) {
  Request request;
  request.method = "PUT";
  request.headers = extra_headers;
  request.key = key;
  request.body = body;
  request.has_body = true;
  request.object_body = true;
  request.what = "PUT " + key;
  AddNewObjectHeaders(content_type, tags, &request);
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status != 200) return ErrorOf(request, response);
  return Unquote(response.headers["etag"]);
}

Result<std::string> S3Client::CreateMultipartUpload(
    const std::string& key, const std::string& content_type,
    const std::map<std::string, std::string>& tags) {
  Request request;
  request.method = "POST";
  request.key = key;
  request.query = {{"uploads", ""}};
  request.has_body = true;
  request.what = "CreateMultipartUpload " + key;
  AddNewObjectHeaders(content_type, tags, &request);
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status != 200) return ErrorOf(request, response);
  ASSIGN_OR_RETURN(std::unique_ptr<XmlElement> xml, ParseXml(response.body));
  std::string upload_id = xml->ChildText("UploadId");
  if (upload_id.empty())
    return Internal("CreateMultipartUpload " + key + ": no UploadId");
  return upload_id;
}

Result<std::string> S3Client::UploadPart(const std::string& key,
                                         const std::string& upload_id, int part_number,
                                         std::string_view body) {
  Request request;
  request.method = "PUT";
  request.key = key;
  request.query = {{"partNumber", std::to_string(part_number)}, {"uploadId", upload_id}};
  request.body = body;
  request.has_body = true;
  request.object_body = true;
  request.what = "UploadPart " + std::to_string(part_number) + " of " + key;
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status != 200) return ErrorOf(request, response);
  return Unquote(response.headers["etag"]);
}

Result<std::string> S3Client::CompleteMultipartUpload(
    const std::string& key, const std::string& upload_id,
    const std::vector<std::string>& part_etags,
    const std::vector<std::string>& extra_headers) {
  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < part_etags.size(); ++i) {
    xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>\"" +
           XmlEscape(part_etags[i]) + "\"</ETag></Part>";
  }
  xml += "</CompleteMultipartUpload>";
  Request request;
  request.method = "POST";
  request.key = key;
  request.query = {{"uploadId", upload_id}};
  request.body = xml;
  request.has_body = true;
  request.what = "CompleteMultipartUpload " + key;
  request.headers = extra_headers;
  request.headers.push_back("Content-Type: application/xml");
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status != 200) return ErrorOf(request, response);
  // S3 may answer 200 with an <Error> document when the completion fails late.
  ASSIGN_OR_RETURN(std::unique_ptr<XmlElement> parsed, ParseXml(response.body));
  if (parsed->name == "Error") {
    response.status = 500;
    return ErrorOf(request, response);
  }
  return Unquote(parsed->ChildText("ETag"));
}

Status S3Client::AbortMultipartUpload(const std::string& key,
                                      const std::string& upload_id) {
  Request request;
  request.method = "DELETE";
  request.key = key;
  request.query = {{"uploadId", upload_id}};
  request.what = "AbortMultipartUpload " + key;
  ASSIGN_OR_RETURN(Response response, Send(request));
  // 405/501: a store without the operation (the test server's): its parts stay behind
  // as the store's own debris, never as an object.
  if (response.status == 204 || response.status == 200 || response.status == 404 ||
      response.status == 405 || response.status == 501) {
    return Status::OK();
  }
  return ErrorOf(request, response);
}

Result<std::string> S3Client::CopyObject(const std::string& from, const std::string& to,
                                         const std::string& content_type,
                                         const std::map<std::string, std::string>& tags,
                                         const std::string& if_match) {
  Request request;
  request.method = "PUT";
  request.key = to;
  request.has_body = true;  // an empty one
  request.what = "copy of " + from + " to " + to;
  request.headers = {"x-amz-copy-source: " + ObjectPath(from),
                     "x-amz-metadata-directive: REPLACE",
                     "x-amz-tagging-directive: REPLACE"};
  if (!if_match.empty()) {
    request.headers.push_back("x-amz-copy-source-if-match: \"" + if_match + "\"");
  }
  AddNewObjectHeaders(content_type, tags, &request);
  ASSIGN_OR_RETURN(Response response, Send(request));
  // A copy can fail after its 200 has been sent: the error is then in the body (S3's
  // documentation of CopyObject), so the body decides, not the status alone.
  if (response.status != 200 || response.body.find("<Error>") != std::string::npos) {
    if (response.status == 200) response.status = 500;
    return ErrorOf(request, response);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<XmlElement> xml, ParseXml(response.body));
  std::string etag = Unquote(xml->ChildText("ETag"));
  if (etag.empty()) return Internal(request.what + ": no ETag in the CopyObjectResult");
  return etag;
}

Result<S3ObjectInfo> S3Client::HeadObject(const std::string& key) {
  Request request;
  request.method = "HEAD";
  request.key = key;
  request.what = "HEAD " + key;
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status != 200) return ErrorOf(request, response);
  S3ObjectInfo info;
  info.key = key;
  info.size = std::atoll(response.headers["content-length"].c_str());
  info.etag = Unquote(response.headers["etag"]);
  info.last_modified_unix_s = ParseHttpDate(response.headers["last-modified"]);
  info.content_type = response.headers["content-type"];
  return info;
}

Result<S3ObjectInfo> S3Client::GetObject(
    const std::string& key, int64_t offset, int64_t length, const std::string& if_match,
    const std::function<Status(std::string_view)>& sink) {
  Request request;
  request.key = key;
  request.object_body = true;
  request.sink = &sink;
  request.what = "GET " + key;
  if (offset > 0 || length >= 0) {
    std::string range = "Range: bytes=" + std::to_string(offset) + "-";
    if (length >= 0) range += std::to_string(offset + length - 1);
    request.headers.push_back(range);
  }
  if (!if_match.empty()) request.headers.push_back("If-Match: \"" + if_match + "\"");
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status != 200 && response.status != 206) {
    return ErrorOf(request, response);
  }
  S3ObjectInfo info;
  info.key = key;
  info.etag = Unquote(response.headers["etag"]);
  info.last_modified_unix_s = ParseHttpDate(response.headers["last-modified"]);
  info.content_type = response.headers["content-type"];
  const std::string& content_range = response.headers["content-range"];
  size_t slash = content_range.rfind('/');
  info.size = response.status == 206 && slash != std::string::npos
                  ? std::atoll(content_range.c_str() + slash + 1)
                  : std::atoll(response.headers["content-length"].c_str());
  return info;
}

Status S3Client::DeleteObject(const std::string& key) {
  Request request;
  request.method = "DELETE";
  request.key = key;
  request.what = "DELETE " + key;
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status == 204 || response.status == 200 || response.status == 404) {
    return Status::OK();
  }
  return ErrorOf(request, response);
}

Status S3Client::DeleteObjects(const std::vector<std::string>& keys) {
  if (keys.empty()) return Status::OK();
  std::string xml = "<Delete><Quiet>true</Quiet>";
  for (const std::string& key : keys) {
    xml += "<Object><Key>" + XmlEscape(key) + "</Key></Object>";
  }
  xml += "</Delete>";
  Request request;
  request.method = "POST";
  request.query = {{"delete", ""}};
  request.body = xml;
  request.has_body = true;
  request.what = "DeleteObjects (" + std::to_string(keys.size()) + " keys)";
  request.headers.push_back("Content-Type: application/xml");
  request.headers.push_back("Content-MD5: " + Base64Md5(xml));  // S3 requires it
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status != 200) return ErrorOf(request, response);
  ASSIGN_OR_RETURN(std::unique_ptr<XmlElement> parsed, ParseXml(response.body));
  for (const XmlElement* error : parsed->Children("Error")) {
    return Internal("the object store could not delete " + error->ChildText("Key") +
                    ": " + error->ChildText("Code") + " " + error->ChildText("Message"));
  }
  return Status::OK();
}

Result<S3ListPage> S3Client::ListObjects(const std::string& prefix,
                                         const std::string& delimiter, int max_keys,
                                         const std::string& start_after,
                                         const std::string& continuation_token) {
  Request request;
  request.query = {{"list-type", "2"}, {"max-keys", std::to_string(max_keys)}};
  if (!prefix.empty()) request.query["prefix"] = prefix;
  if (!delimiter.empty()) request.query["delimiter"] = delimiter;
  if (!start_after.empty()) request.query["start-after"] = start_after;
  if (!continuation_token.empty()) {
    request.query["continuation-token"] = continuation_token;
  }
  request.what = "ListObjectsV2 prefix '" + prefix + "'";
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status != 200) return ErrorOf(request, response);
  ASSIGN_OR_RETURN(std::unique_ptr<XmlElement> xml, ParseXml(response.body));
  S3ListPage page;
  for (const XmlElement* content : xml->Children("Contents")) {
    S3ObjectInfo info;
    info.key = content->ChildText("Key");
    info.size = std::atoll(content->ChildText("Size").c_str());
    info.etag = Unquote(content->ChildText("ETag"));
    info.last_modified_unix_s = ParseIsoDate(content->ChildText("LastModified"));
    page.objects.push_back(std::move(info));
  }
  for (const XmlElement* common : xml->Children("CommonPrefixes")) {
    page.common_prefixes.push_back(common->ChildText("Prefix"));
  }
  page.truncated = xml->ChildText("IsTruncated") == "true";
  page.next_continuation_token = xml->ChildText("NextContinuationToken");
  return page;
}

Result<std::map<std::string, std::string>> S3Client::GetObjectTagging(
    const std::string& key) {
  Request request;
  request.key = key;
  request.query = {{"tagging", ""}};
  request.what = "GetObjectTagging " + key;
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status != 200) return ErrorOf(request, response);
  ASSIGN_OR_RETURN(std::unique_ptr<XmlElement> xml, ParseXml(response.body));
  std::map<std::string, std::string> tags;
  if (const XmlElement* set = xml->Child("TagSet")) {
    for (const XmlElement* tag : set->Children("Tag")) {
      tags[tag->ChildText("Key")] = tag->ChildText("Value");
    }
  }
  return tags;
}

Status S3Client::PutObjectTagging(const std::string& key,
                                  const std::map<std::string, std::string>& tags) {
  std::string xml = "<Tagging><TagSet>";
  for (const auto& [name, value] : tags) {
    xml += "<Tag><Key>" + XmlEscape(name) + "</Key><Value>" + XmlEscape(value) +
           "</Value></Tag>";
  }
  xml += "</TagSet></Tagging>";
  Request request;
  request.method = "PUT";
  request.key = key;
  request.query = {{"tagging", ""}};
  request.body = xml;
  request.has_body = true;
  request.what = "PutObjectTagging " + key;
  request.headers.push_back("Content-Type: application/xml");
  request.headers.push_back("Content-MD5: " + Base64Md5(xml));
  ASSIGN_OR_RETURN(Response response, Send(request));
  if (response.status != 200) return ErrorOf(request, response);
  return Status::OK();
}

std::string S3Client::Presign(const std::string& method, const std::string& key,
                              int64_t now_unix_s, int64_t expires_seconds,
                              const std::map<std::string, std::string>& query) const {
  SigV4PresignRequest request;
  request.method = method;
  request.scheme = scheme_;
  request.host = host_;
  request.encoded_path = ObjectPath(key);
  request.query = query;
  request.region = location_.region;
  request.now_unix_s = now_unix_s;
  request.expires_seconds = std::clamp<int64_t>(expires_seconds, 1, 604800);
  return SigV4Presign(request, location_.credentials).url;
}

}  // namespace sheetlog
