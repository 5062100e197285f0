// Hostile and unlucky HTTP clients against the real binary: bodies that are too large
// however they are framed or compressed, floods of
// idle and trickling connections, pipelining, half-closed sockets, SIGTERM with a slow
// client, cross-site requests and foreign Host headers, blank tokens. Raw sockets over
// loopback (httplib's client cannot send most of these); no sleeps: a test that waits
// for the server to close a connection does a blocking read until EOF.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/api_client.h"
#include "tests/support/raw_http.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

json BodyOf(const std::string& response) {
  size_t at = response.find("\r\n\r\n");
  if (at == std::string::npos) return nullptr;
  return json::parse(response.substr(at + 4), nullptr, false);
}

std::string Gzip(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Lets this test process hold as many sockets as the hard limit allows.
void RaiseFileLimit() {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
}

class HttpHostileTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> flags = {}, std::string token = "") {
    ServerOptions options = ServerOptions::InMemory(std::move(flags));
    options.token = std::move(token);
    // A small quarantine keeps ASan's own memory out of the RSS comparisons.
    options.env.push_back({"ASAN_OPTIONS", "quarantine_size_mb=8:detect_leaks=1"});
    server_ = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(server_->Start()) << server_->error();
  }

  std::string HostHeader() const {
    return "Host: 127.0.0.1:" + std::to_string(server_->port()) + "\r\n";
  }

  int64_t SheetCount() {
    httplib::Client client = server_->Client();
    JsonResponse sheets = Get(client, "/v1/sheets");
    EXPECT_EQ(sheets.status, 200) << sheets.raw;
    return static_cast<int64_t>(sheets.body["sheets"].size());
  }

  // A sheet made over a connection of its own, closed again before the test goes on
  // (an idle keep-alive connection would count against the limits tested here).
  std::string NewSheet() {
    httplib::Client client = server_->Client();
    return CreateSheet(client);
  }

  // Sends `head` then up to `total` body bytes produced by `next_piece`, reading at the
  // same time; returns the response as soon as one arrives (or whatever came before
  // the server closed). The client keeps sending while the server reads, so a server
  // that buffers the whole body would take it all.
  std::string SendWhileReading(const std::string& head,
                               const std::function<std::string()>& next_piece,
                               size_t total, size_t* sent_out) {
    RawConnection conn(server_->port());
    EXPECT_TRUE(conn.ok());
    EXPECT_TRUE(conn.Send(head));
    std::string pending = next_piece();
    size_t pending_pos = 0;
    size_t sent = 0;
    std::string received;
    bool can_send = true;
    while (true) {
      pollfd p{conn.fd(), static_cast<short>(POLLIN | (can_send ? POLLOUT : 0)), 0};
      if (poll(&p, 1, 60000) <= 0) break;
      if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[65536];
        ssize_t n = recv(conn.fd(), buf, sizeof(buf), 0);
        if (n <= 0) break;
        received.append(buf, static_cast<size_t>(n));
        size_t head_end = received.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          size_t at = received.find("Content-Length: ");
          size_t length =
              at == std::string::npos ? 0 : std::stoul(received.substr(at + 16));
          if (received.size() >= head_end + 4 + length) break;
        }
      }
      if (can_send && (p.revents & POLLOUT)) {
        if (pending_pos == pending.size()) {
          if (sent >= total) {
            can_send = false;
            continue;
          }
          pending = next_piece();
          pending_pos = 0;
        }
        ssize_t n = send(conn.fd(), pending.data() + pending_pos,
                         pending.size() - pending_pos, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0) {
          can_send = false;  // the server closed its side: read what it said
          continue;
        }
        pending_pos += static_cast<size_t>(n);
        sent += static_cast<size_t>(n);
      }
    }
    if (sent_out) *sent_out = sent;
    return received;
  }

  std::unique_ptr<ServerProcess> server_;
};

// A chunked body is held to --max-request like a Content-Length one, and
// nothing of it is buffered beyond the limit.
TEST_F(HttpHostileTest, ChunkedBodyOverTheLimitIs413WithoutBeingBuffered) {
  StartServer();
  const int64_t rss_before = server_->PeakRssKb();
  const std::string chunk(64 << 10, 'x');
  char size_line[32];
  std::snprintf(size_line, sizeof(size_line), "%zx\r\n", chunk.size());
  const std::string framed = size_line + chunk + "\r\n";
  size_t sent = 0;
  std::string response = SendWhileReading(
      "POST /v1/sheets HTTP/1.1\r\n" + HostHeader() +
          "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
      [&] { return framed; }, size_t{100} << 20, &sent);
  EXPECT_EQ(StatusOf(response), 413) << response.substr(0, 300);
  json body = BodyOf(response);
  EXPECT_EQ(body["error"]["code"], "PayloadTooLarge") << response;
  EXPECT_EQ(body["error"]["limit"], 1 << 20) << response;
  // The server refused long before 100 MiB, and its memory did not grow with the body.
  EXPECT_LT(sent, size_t{100} << 20);
  const int64_t rss_after = server_->PeakRssKb();
  EXPECT_LT(rss_after - rss_before, 48 * 1024) << rss_before << " kB -> " << rss_after;
  EXPECT_EQ(SheetCount(), 0);
  httplib::Client client = server_->Client();
  EXPECT_EQ(Get(client, "/healthz").status, 200);
}

// A chunked body within the limit is read like any other.
TEST_F(HttpHostileTest, ChunkedBodyWithinTheLimitIsServed) {
  StartServer();
  RawConnection conn(server_->port());
  std::string body = R"({"name":"chunked"})";
  ASSERT_TRUE(conn.Send("POST /v1/sheets HTTP/1.1\r\n" + HostHeader() +
                        "Transfer-Encoding: chunked\r\n\r\n5\r\n" + body.substr(0, 5) +
                        "\r\n" + "d" /* 13 in hex */ + "\r\n" + body.substr(5) +
                        "\r\n0\r\n\r\n"));
  std::string response = conn.ReadResponseText();
  EXPECT_EQ(StatusOf(response), 201) << response;
  EXPECT_EQ(BodyOf(response)["name"], "chunked") << response;
}

// A gzip body is inflated with its inflated size counted against the limit:
// a bomb (64 MiB of zeros in ~64 KiB) is a 413 and the server's memory stays small.
TEST_F(HttpHostileTest, GzipBombIs413AndMemoryStaysSmall) {
  StartServer();
  const std::string sheet = NewSheet();
  const int64_t rss_before = server_->PeakRssKb();
  std::string bomb =
      Gzip(R"({"type":"Note","body":")" + std::string(64 << 20, '0') + R"("})");
  ASSERT_LT(bomb.size(), size_t{1} << 20);  // within the limit as sent
  RawConnection conn(server_->port());
  ASSERT_TRUE(conn.Send("POST /v1/sheets/" + sheet + "/entries HTTP/1.1\r\n" +
                        HostHeader() + "Content-Encoding: gzip\r\nContent-Length: " +
                        std::to_string(bomb.size()) + "\r\n\r\n" + bomb));
  std::string response = conn.ReadResponseText();
  EXPECT_EQ(StatusOf(response), 413) << response.substr(0, 300);
  EXPECT_EQ(BodyOf(response)["error"]["code"], "PayloadTooLarge") << response;
  const int64_t rss_after = server_->PeakRssKb();
  EXPECT_LT(rss_after - rss_before, 32 * 1024) << rss_before << " kB -> " << rss_after;
  httplib::Client client = server_->Client();
  EXPECT_EQ(Get(client, "/v1/sheets/" + sheet).body["next_seq"], 1);
}

// A small gzip body is inflated and served.
TEST_F(HttpHostileTest, GzipBodyWithinTheLimitIsInflated) {
  StartServer();
  std::string body = Gzip(R"({"name":"zipped"})");
  RawConnection conn(server_->port());
  ASSERT_TRUE(conn.Send("POST /v1/sheets HTTP/1.1\r\n" + HostHeader() +
                        "Content-Encoding: gzip\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body));
  std::string response = conn.ReadResponseText();
  EXPECT_EQ(StatusOf(response), 201) << response;
  EXPECT_EQ(BodyOf(response)["name"], "zipped") << response;
}

// Without the token, the 401 comes from the head alone: the body is never
// sent here, and the server answers and closes anyway.
TEST_F(HttpHostileTest, UnauthenticatedBodyIsRefusedWithoutBeingRead) {
  StartServer({}, "secret-token");
  RawConnection conn(server_->port());
  ASSERT_TRUE(conn.Send("POST /v1/sheets HTTP/1.1\r\n" + HostHeader() +
                        "Content-Encoding: gzip\r\nContent-Length: 400000\r\n\r\n"));
  std::string response = conn.ReadToEnd();  // the server closes after its answer
  EXPECT_EQ(StatusOf(response), 401) << response;
  EXPECT_EQ(BodyOf(response)["error"]["code"], "Unauthorized") << response;
  // Chunked, same.
  RawConnection chunked(server_->port());
  ASSERT_TRUE(chunked.Send("POST /v1/sheets HTTP/1.1\r\n" + HostHeader() +
                           "Transfer-Encoding: chunked\r\n\r\n"));
  EXPECT_EQ(StatusOf(chunked.ReadToEnd()), 401);
}

// 10,000 idle connections do not stop the server answering a new client.
TEST_F(HttpHostileTest, TenThousandIdleConnectionsAndHealthzIsAnswered) {
  RaiseFileLimit();
  StartServer();
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 10000; ++i) {
    idle.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(idle.back()->ok()) << "connection " << i;
  }
  httplib::Client client = server_->Client();
  client.set_connection_timeout(30);
  client.set_read_timeout(30);
  JsonResponse health = Get(client, "/healthz");
  EXPECT_EQ(health.status, 200) << health.raw;
  // Operators see them.
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  const std::string series = "\nsheetlog_http_connections ";
  size_t at = metrics->body.find(series);
  ASSERT_NE(at, std::string::npos);
  EXPECT_GE(std::stod(metrics->body.substr(at + series.size())), 10000)
      << metrics->body.substr(at, 60);
  // A request on one of the idle connections is served too.
  ASSERT_TRUE(idle[5000]->Send("GET /healthz HTTP/1.1\r\n" + HostHeader() + "\r\n"));
  EXPECT_EQ(StatusOf(idle[5000]->ReadResponseText()), 200);
}

// When the connection bound is reached, the oldest idle connection makes room.
TEST_F(HttpHostileTest, FullServerEvictsTheOldestIdleConnection) {
  StartServer({"--max-connections", "8"});
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 8; ++i) {
    idle.push_back(std::make_unique<RawConnection>(server_->port()));
    // A served request makes the accept (and its order) certain.
    ASSERT_TRUE(idle.back()->Send("GET /healthz HTTP/1.1\r\n" + HostHeader() + "\r\n"));
    ASSERT_EQ(StatusOf(idle.back()->ReadResponseText()), 200);
  }
  RawConnection fresh(server_->port());
  ASSERT_TRUE(fresh.Send("GET /healthz HTTP/1.1\r\n" + HostHeader() + "\r\n"));
  EXPECT_EQ(StatusOf(fresh.ReadResponseText()), 200);
  EXPECT_TRUE(idle[0]->ClosedByServer());  // the oldest idle one made room
}

// 256 connections trickling header bytes do not stop the server answering,
// and the header timeout closes them (408).
TEST_F(HttpHostileTest, TricklingHeadersDoNotStarveOthersAndTimeOut) {
  StartServer({"--header-timeout", "1"});
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 256; ++i) {
    slow.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(slow.back()->Send("GET /healthz HTTP/1.1\r\nX-Slow: a"));
  }
  httplib::Client client = server_->Client();
  client.set_read_timeout(30);
  EXPECT_EQ(Get(client, "/healthz").status, 200);
  for (int i = 0; i < 256; ++i) {
    ASSERT_TRUE(slow[i]->Send("b"));
  }
  EXPECT_EQ(Get(client, "/readyz").status, 200);
  // The server gives up on each after --header-timeout: 408, then EOF.
  std::string answer = slow[0]->ReadToEnd();
  EXPECT_EQ(StatusOf(answer), 408) << answer;
  EXPECT_EQ(BodyOf(answer)["error"]["code"], "RequestTimeout") << answer;
  EXPECT_EQ(StatusOf(slow[255]->ReadToEnd()), 408);
}

// An idle keep-alive connection and a stalled body are closed after their
// timeouts (the stalled body with a 408), so neither holds the server for ever.
TEST_F(HttpHostileTest, IdleConnectionsAndStalledBodiesTimeOut) {
  StartServer({"--idle-timeout", "0.5", "--body-timeout", "0.5"});
  RawConnection idle(server_->port());
  ASSERT_TRUE(idle.Send("GET /healthz HTTP/1.1\r\n" + HostHeader() + "\r\n"));
  EXPECT_EQ(StatusOf(idle.ReadResponseText()), 200);
  EXPECT_TRUE(idle.ClosedByServer());  // after --idle-timeout with no request
  RawConnection stalled(server_->port());
  ASSERT_TRUE(stalled.Send("POST /v1/sheets HTTP/1.1\r\n" + HostHeader() +
                           "Content-Length: 100\r\n\r\n{\"name\""));
  std::string answer = stalled.ReadToEnd();
  EXPECT_EQ(StatusOf(answer), 408) << answer;
  EXPECT_EQ(BodyOf(answer)["error"]["code"], "RequestTimeout") << answer;
  EXPECT_EQ(SheetCount(), 0);
}

// A streamed body (a blob or presigned upload, read by its handler on a
// worker) holds that worker while it arrives, so as many trickling uploads as workers
// took every worker and nothing else was answered. At most half the workers read
// streamed bodies; the other uploads wait, unread, for a turn. With --threads 4 and
// six stalled uploads (two reading, four waiting), /healthz and an append are
// answered, and every upload completes once its client sends the rest.
TEST_F(HttpHostileTest, TricklingUploadsDoNotTakeEveryWorker) {
  // A long body timeout: the uploads must not be let go by the server, only by their
  // clients (before the bound, /healthz waited for the workers until RawConnection's
  // 60 s read bound failed the test).
  StartServer({"--threads", "4", "--body-timeout", "300"});
  const std::string sheet = NewSheet();
  const std::string body(1000, 'u');
  std::vector<std::unique_ptr<RawConnection>> uploads;
  for (int i = 0; i < 6; ++i) {
    uploads.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(uploads.back()->Send("PUT /v1/blobs/mine/slow-" + std::to_string(i) +
                                     " HTTP/1.1\r\n" + HostHeader() +
                                     "Content-Length: " + std::to_string(body.size()) +
                                     "\r\n\r\n" + body.substr(0, 10)));
  }
  // A trickle: one more byte each, well inside the stall timeout.
  for (auto& upload : uploads) ASSERT_TRUE(upload->Send(body.substr(10, 1)));

  RawConnection health(server_->port());
  ASSERT_TRUE(health.Send("GET /healthz HTTP/1.1\r\n" + HostHeader() + "\r\n"));
  std::string healthz = health.ReadResponseText();
  EXPECT_EQ(StatusOf(healthz), 200) << healthz;
  RawConnection append(server_->port());
  const std::string entry = R"({"type":"SetCell","body":{"ref":"A1","value":1}})";
  ASSERT_TRUE(append.Send("POST /v1/sheets/" + sheet + "/entries HTTP/1.1\r\n" +
                          HostHeader() + "Content-Type: application/json\r\n" +
                          "Content-Length: " + std::to_string(entry.size()) + "\r\n\r\n" +
                          entry));
  std::string appended = append.ReadResponseText();
  EXPECT_EQ(StatusOf(appended), 201) << appended;

  // The clients finish: the two being read and the four waiting all complete.
  for (auto& upload : uploads) ASSERT_TRUE(upload->Send(body.substr(11)));
  for (int i = 0; i < 6; ++i) {
    std::string response = uploads[i]->ReadResponseText();
    EXPECT_EQ(StatusOf(response), 200) << "upload " << i << ": " << response;
  }
  httplib::Client client = server_->Client();
  auto stored = client.Get("/v1/blobs/mine/slow-5");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, 200);
  EXPECT_EQ(stored->body, body);
}

// The head is bounded in size too.
TEST_F(HttpHostileTest, OversizedHeadIs431) {
  StartServer();
  RawConnection conn(server_->port());
  ASSERT_TRUE(conn.Send("GET /healthz HTTP/1.1\r\n" + HostHeader() +
                        "X-Big: " + std::string(64 << 10, 'a') + "\r\n\r\n"));
  EXPECT_EQ(StatusOf(conn.ReadToEnd()), 431);
}

// Pipelined requests are all answered, in order.
TEST_F(HttpHostileTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  const std::string sheet = NewSheet();
  RawConnection conn(server_->port());
  const std::string host = HostHeader();
  ASSERT_TRUE(conn.Send("GET /healthz HTTP/1.1\r\n" + host + "\r\n" + "GET /v1/sheets/" +
                        sheet + " HTTP/1.1\r\n" + host + "\r\n" +
                        "GET /v1/sheets/nope HTTP/1.1\r\n" + host +
                        "Connection: close\r\n\r\n"));
  std::string first = conn.ReadResponseText();
  std::string second = conn.ReadResponseText();
  std::string third = conn.ReadResponseText();
  EXPECT_EQ(StatusOf(first), 200) << first;
  EXPECT_EQ(BodyOf(first)["status"], "ok") << first;
  EXPECT_EQ(StatusOf(second), 200) << second;
  EXPECT_EQ(BodyOf(second)["id"], sheet) << second;
  EXPECT_EQ(StatusOf(third), 404) << third;
  EXPECT_TRUE(conn.ClosedByServer());  // then the server closes, as asked
}

// A client that half-closes after its request still gets the response.
TEST_F(HttpHostileTest, HalfClosedClientGetsItsResponse) {
  StartServer();
  RawConnection conn(server_->port());
  ASSERT_TRUE(conn.Send("POST /v1/sheets HTTP/1.1\r\n" + HostHeader() +
                        "Content-Length: 15\r\n\r\n{\"name\":\"half\"}"));
  conn.ShutdownWrite();
  std::string response = conn.ReadToEnd();
  EXPECT_EQ(StatusOf(response), 201) << response;
  EXPECT_EQ(BodyOf(response)["name"], "half") << response;
}

// The body's content type does not matter: curl -d's form-urlencoded body is
// read as JSON up to --max-request.
TEST_F(HttpHostileTest, FormUrlencodedBodyIsReadUpToMaxRequest) {
  StartServer();
  const std::string sheet = NewSheet();
  httplib::Client client = server_->Client();
  json entry = {{"type", "SetCell"},
                {"body", {{"ref", "A1"}, {"value", std::string(100 << 10, 'v')}}}};
  auto result = client.Post("/v1/sheets/" + sheet + "/entries", entry.dump(),
                            "application/x-www-form-urlencoded");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 201) << result->body;
}

// A cross-site page cannot change anything; the server's own origin can.
TEST_F(HttpHostileTest, CrossSiteStateChangesAreRefused) {
  StartServer();
  httplib::Client client = server_->Client();
  const std::string own = "http://127.0.0.1:" + std::to_string(server_->port());
  // A form-like "simple" request a page may send anywhere without a preflight (one
  // Content-Type: two different ones would be refused as malformed before the Origin
  // is looked at).
  httplib::Result evil = client.Post("/v1/sheets", {{"Origin", "http://evil.example"}},
                                     R"({"name":"evil"})", "text/plain");
  ASSERT_TRUE(evil);
  EXPECT_EQ(evil->status, 403) << evil->body;
  EXPECT_EQ(json::parse(evil->body, nullptr, false)["error"]["code"], "Forbidden")
      << evil->body;
  EXPECT_NE(evil->body.find("Origin"), std::string::npos) << evil->body;
  JsonResponse fetch_site =
      Request(client, "POST", "/v1/sheets", "{}", {{"Sec-Fetch-Site", "cross-site"}});
  EXPECT_EQ(fetch_site.status, 403) << fetch_site.raw;
  JsonResponse null_origin =
      Request(client, "POST", "/v1/sheets", "{}", {{"Origin", "null"}});
  EXPECT_EQ(null_origin.status, 403) << null_origin.raw;
  EXPECT_EQ(SheetCount(), 0);
  // The server's own pages (same origin) and tools (no Origin) are served.
  JsonResponse same = Request(client, "POST", "/v1/sheets", R"({"name":"own"})",
                              {{"Origin", own}, {"Sec-Fetch-Site", "same-origin"}});
  EXPECT_EQ(same.status, 201) << same.raw;
  EXPECT_EQ(Post(client, "/v1/sheets", {{"name", "tool"}}).status, 201);
  // Reads from anywhere are not state changes (the browser keeps their answers from
  // the page: no CORS headers).
  JsonResponse read =
      Request(client, "GET", "/v1/sheets", "", {{"Origin", "http://evil.example"}});
  EXPECT_EQ(read.status, 200) << read.raw;
  EXPECT_EQ(SheetCount(), 2);
}

// DNS rebinding: a Host that is not this server's is refused; --allowed-host
// adds names.
TEST_F(HttpHostileTest, ForeignHostIsRefusedUnlessAllowed) {
  StartServer({"--allowed-host", "sheets.internal,proxy.example:8443"});
  const std::string port = std::to_string(server_->port());
  auto status_with_host = [&](const std::string& host) {
    RawConnection conn(server_->port());
    EXPECT_TRUE(conn.Send("GET /v1/sheets HTTP/1.1\r\nHost: " + host + "\r\n\r\n"));
    return StatusOf(conn.ReadResponseText());
  };
  EXPECT_EQ(status_with_host("evil.example:" + port), 403);
  EXPECT_EQ(status_with_host("evil.example"), 403);
  EXPECT_EQ(status_with_host("localhost:" + port), 200);
  EXPECT_EQ(status_with_host("127.0.0.1:" + port), 200);
  EXPECT_EQ(status_with_host("[::1]:" + port), 200);
  EXPECT_EQ(status_with_host("127.0.0.1"), 200);  // IP literals cannot be rebound
  EXPECT_EQ(status_with_host("evil.localhost.example:" + port), 403);
  EXPECT_EQ(status_with_host("sheets.internal:" + port), 200);
  EXPECT_EQ(status_with_host("sheets.internal"), 200);
  EXPECT_EQ(status_with_host("proxy.example:8443"), 200);
  EXPECT_EQ(status_with_host("proxy.example:9999"), 403);
  RawConnection conn(server_->port());
  ASSERT_TRUE(conn.Send("GET /healthz HTTP/1.1\r\nHost: evil.example\r\n\r\n"));
  std::string refused = conn.ReadResponseText();
  EXPECT_NE(BodyOf(refused)["error"]["message"].get<std::string>().find("--allowed-host"),
            std::string::npos)
      << refused;
}

// An empty or blank token is refused at start.
TEST_F(HttpHostileTest, BlankTokenIsRefusedAtStart) {
  for (const std::string& token : {std::string(" "), std::string("\t "), std::string()}) {
    ServerOptions options = ServerOptions::InMemory({"--token", token});
    ServerProcess server(options);
    EXPECT_FALSE(server.Start()) << "started with token '" << token << "'";
    EXPECT_NE(server.Log().find("blank"), std::string::npos) << server.Log();
  }
  ServerOptions from_env = ServerOptions::InMemory();
  from_env.env.push_back({"SHEETLOG_TOKEN", "   "});
  ServerProcess server(from_env);
  EXPECT_FALSE(server.Start());
  EXPECT_NE(server.Log().find("SHEETLOG_TOKEN"), std::string::npos) << server.Log();
}

// SIGTERM with slow clients (a stalled body, a trickling head, idle
// keep-alive) stops within the shutdown grace, cleanly; the next start finds every
// acknowledged entry and nothing to repair.
TEST(HttpShutdownTest, SigtermWithSlowClientsExitsPromptlyAndCleanly) {
  TempDir dir;
  std::unique_ptr<ServerProcess> server =
      std::make_unique<ServerProcess>(ServerOptions(dir.path()));
  ASSERT_TRUE(server->Start()) << server->error();
  httplib::Client client = server->Client();
  const std::string sheet = CreateSheet(client);
  ASSERT_FALSE(HasFatalFailure());
  for (int i = 1; i <= 20; ++i) ASSERT_NO_FATAL_FAILURE(SetCell(client, sheet, "A1", i));
  const std::string host = "Host: 127.0.0.1:" + std::to_string(server->port()) + "\r\n";
  RawConnection stalled_body(server->port());
  ASSERT_TRUE(stalled_body.Send("POST /v1/sheets/" + sheet + "/entries HTTP/1.1\r\n" +
                                host + "Content-Length: 100\r\n\r\n{\"type\""));
  RawConnection trickling(server->port());
  ASSERT_TRUE(trickling.Send("GET /healthz HTTP/1.1\r\nX-Slow: "));
  RawConnection idle(server->port());
  ASSERT_TRUE(idle.Send("GET /healthz HTTP/1.1\r\n" + host + "\r\n"));
  ASSERT_EQ(StatusOf(idle.ReadResponseText()), 200);

  // Stop() waits for the exit; a bound on that wait turns a hang into a failure rather
  // than a stuck suite. 5 s: the 2 s grace plus stopping the workers and the database
  // (measured: 0.2 s under ASan, the slow clients being closed at once; the old server
  // took up to 26 s).
  std::mutex mu;
  std::condition_variable exited_cv;
  bool exited = false;
  int status = -1;
  const auto sigterm_at = std::chrono::steady_clock::now();
  std::thread stopper([&] {
    int s = server->Stop();
    std::lock_guard lock(mu);
    status = s;
    exited = true;
    exited_cv.notify_all();
  });
  {
    std::unique_lock lock(mu);
    bool in_time =
        exited_cv.wait_for(lock, std::chrono::seconds(5), [&] { return exited; });
    EXPECT_TRUE(in_time) << "the server did not exit within 5 s of SIGTERM";
  }
  std::cout << "[sigterm] exited after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - sigterm_at)
                   .count()
            << " ms\n";
  stopper.join();
  ASSERT_TRUE(WIFEXITED(status)) << server->Log();
  EXPECT_EQ(WEXITSTATUS(status), 0) << server->Log();
  // The slow clients were closed: EOF (the stalled ones get nothing or a 503/408).
  stalled_body.ReadToEnd();
  trickling.ReadToEnd();
  EXPECT_TRUE(idle.ClosedByServer());

  ServerProcess restarted((ServerOptions(dir.path())));
  ASSERT_TRUE(restarted.Start()) << restarted.error();
  httplib::Client again = restarted.Client();
  EXPECT_EQ(Get(again, "/v1/sheets/" + sheet).body["next_seq"], 21);
  JsonResponse verify = Get(again, "/v1/admin/verify");
  EXPECT_EQ(verify.status, 200) << verify.raw;
  EXPECT_EQ(verify.body["ok"], true) << verify.raw;
  // Nothing for the new process to take over: no run was left started by the old one.
  JsonResponse abandoned = Get(again, "/v1/admin/jobs?status=abandoned");
  EXPECT_EQ(abandoned.status, 200) << abandoned.raw;
  EXPECT_TRUE(abandoned.body["jobs"].empty()) << abandoned.raw;
  JsonResponse failed = Get(again, "/v1/admin/jobs?status=failed");
  EXPECT_TRUE(failed.body["jobs"].empty()) << failed.raw;
}

}  // namespace
}  // namespace sheetlog::testing
