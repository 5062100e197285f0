#include "src/api/http/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "src/api/http/http_parser.h"
#include "src/api/http/response_channel.h"

namespace sheetlog::api::http {
namespace {

constexpr uint64_t kListenerId = 0;
constexpr uint64_t kMailboxId = 1;
constexpr size_t kReadChunk = 64 << 10;
// Input read ahead of the request being served (pipelined requests), beyond the head.
constexpr size_t kMaxReadAhead = 64 << 10;
// After a response that closes the connection with the request body unread: read and
// drop at most this much (or for this long) before closing, so the client sees the
// response rather than a reset.
constexpr size_t kLingerBytes = 4 << 20;
constexpr int64_t kLingerMs = 1000;
constexpr int64_t kSweepIntervalMs = 50;

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The minimum-rate rule (HttpServerOptions::body_min_rate): a body whose reading began
// at `started_ms` and of which `received` bytes have arrived must be complete by the
// returned time; INT64_MAX without a rule.
int64_t RateDeadlineMs(int64_t started_ms, int64_t received, int64_t timeout_ms,
                       int64_t min_rate) {
  if (min_rate <= 0) return INT64_MAX;
  return started_ms + timeout_ms + received * 1000 / min_rate;
}

// Serializes a response head. `body_length` < 0: chunked.
std::string SerializeHead(const Response& response, int64_t body_length,
                          bool close_after) {
  std::string head;
  head.reserve(256);
  head += "HTTP/1.1 ";
  head += std::to_string(response.status);
  head += ' ';
  head += StatusReason(response.status);
  head += "\r\n";
  for (const auto& [name, value] : response.headers) {
    if (strcasecmp(name.c_str(), "Content-Length") == 0 ||
        strcasecmp(name.c_str(), "Transfer-Encoding") == 0 ||
        strcasecmp(name.c_str(), "Connection") == 0) {
      continue;  // the server owns the framing
    }
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  const bool no_body = response.status == 204 || response.status == 304 ||
                       (response.status >= 100 && response.status < 200);
  if (!no_body) {
    if (body_length >= 0) {
      head += "Content-Length: ";
      head += std::to_string(body_length);
      head += "\r\n";
    } else {
      head += "Transfer-Encoding: chunked\r\n";
    }
  }
  if (close_after) head += "Connection: close\r\n";
  head += "\r\n";
  return head;
}

// A fixed pool of threads running tasks from a bounded queue.
class WorkerPool {
 public:
  WorkerPool(int threads, size_t max_queued) : max_queued_(max_queued) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
  }
  ~WorkerPool() { Shutdown(); }

  // False if the queue is full or the pool is shutting down.
  bool TrySubmit(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      if (stopping_ || queue_.size() >= max_queued_) return false;
      queue_.push_back(std::move(task));
    }
    ready_.notify_one();
    return true;
  }

  // Drops queued tasks, lets running ones finish, joins the threads.
  void Shutdown() {
    std::deque<std::function<void()>> dropped;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      dropped.swap(queue_);
    }
    ready_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
  }

 private:
  void Run() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// What a worker hands back to the event loop when a request is served.
struct Completion {
  uint64_t connection = 0;
  std::string bytes;  // the response head, and the whole body if it is a string
  bool close_after = false;
  std::shared_ptr<ResponseChannel> channel;  // the rest of the body, if streamed
  // For requests whose body the worker read from the socket itself.
  bool returns_socket = false;
  std::string leftover_input;  // bytes read past the body (the next request)
};

// Where workers and stream writers leave news for the event loop; shared so a
// StreamWriter kept by a producer stays safe after the server is gone.
struct Mailbox {
  std::mutex mu;
  std::vector<Completion> completions;
  std::vector<uint64_t> wakes;
  int event_fd = -1;
  bool closed = false;

  void NotifyLocked(bool was_empty) {
    if (was_empty && event_fd >= 0) {
      uint64_t one = 1;
      ssize_t n = write(event_fd, &one, sizeof(one));
      (void)n;  // a full counter already wakes the loop
    }
  }
  void Post(Completion completion) {
    std::lock_guard lock(mu);
    if (closed) {
      if (completion.channel) completion.channel->Break();
      return;
    }
    bool was_empty = completions.empty() && wakes.empty();
    completions.push_back(std::move(completion));
    NotifyLocked(was_empty);
  }
  void Wake(uint64_t connection) {
    std::lock_guard lock(mu);
    if (closed) return;
    bool was_empty = completions.empty() && wakes.empty();
    wakes.push_back(connection);
    NotifyLocked(was_empty);
  }
  void Signal() {
    std::lock_guard lock(mu);
    NotifyLocked(true);
  }
};

// Hands a response with a string body to the loop.
void PostStringResponse(Mailbox& mailbox, Completion completion, const Response& response,
                        bool head_only, bool close_after) {
  completion.close_after = close_after;
  completion.bytes =
      SerializeHead(response, static_cast<int64_t>(response.body.size()), close_after);
  if (!head_only) completion.bytes += response.body;
  mailbox.Post(std::move(completion));
}

// Makes `sender` deliver to connection `id` through `mailbox` alone, so that a response
// sent after the server is gone is merely dropped (Mailbox::closed).
void AttachDeferred(ResponseSender& sender, std::shared_ptr<Mailbox> mailbox, uint64_t id,
                    bool head_only, bool close_after) {
  sender.Attach([mailbox = std::move(mailbox), id, head_only,
                 close_after](std::optional<Response> reply) {
    if (!reply || reply->body_kind != Response::BodyKind::kString) {
      // The layers above always send a string body; this is the last resort.
      reply.emplace();
      reply->status = 500;
      reply->set_content("the request's handler gave no response\n",
                         "text/plain; charset=utf-8");
    }
    Completion completion;
    completion.connection = id;
    PostStringResponse(*mailbox, std::move(completion), *reply, head_only, close_after);
  });
}

// DataSink over a ResponseChannel, counting what was written.
class ChannelSink : public DataSink {
 public:
  explicit ChannelSink(ResponseChannel* channel) : channel_(channel) {}
  bool write(const char* data, size_t size) override {
    if (!channel_->WriteBlocking(std::string_view(data, size))) return false;
    written_ += size;
    return true;
  }
  void done() override { done_ = true; }
  size_t written() const { return written_; }
  bool is_done() const { return done_; }

 private:
  ResponseChannel* channel_;
  size_t written_ = 0;
  bool done_ = false;
};

// How long a body may take (HttpServerOptions::body_timeout_ms and body_min_rate), by
// which clock.
struct BodyPace {
  int64_t timeout_ms = 0;
  int64_t min_rate = 0;
  std::function<int64_t()> clock;
  // A manual clock does not wake poll(): wait in slices and read the clock again.
  bool poll_in_slices = false;
};

// Reads a streamed request body straight from the socket on a worker thread, held to
// the same stall and rate rules as a body the event loop buffers.
class SocketBodyReader {
 public:
  SocketBodyReader(int fd, std::string buffered, BodyDecoder decoder, int64_t max_bytes,
                   BodyPace pace)
      : fd_(fd),
        buffer_(std::move(buffered)),
        decoder_(std::move(decoder)),
        max_bytes_(max_bytes),
        pace_(std::move(pace)),
        started_ms_(pace_.clock()),
        last_progress_ms_(started_ms_),
        received_(static_cast<int64_t>(buffer_.size())) {}

  bool Read(const ContentReceiver& receiver) {
    std::string piece;
    while (true) {
      if (!buffer_.empty() || decoder_.done()) {
        piece.clear();
        size_t consumed = 0;
        BodyDecoder::State state =
            decoder_.Decode(buffer_, &piece, kReadChunk, &consumed);
        buffer_.erase(0, consumed);
        delivered_ += static_cast<int64_t>(piece.size());
        if (delivered_ > max_bytes_) return false;
        if (!piece.empty() && !receiver(piece.data(), piece.size())) return false;
        if (state == BodyDecoder::State::kDone) {
          complete_ = true;
          return true;
        }
        if (state == BodyDecoder::State::kError) return false;
        if (!piece.empty() || consumed > 0) continue;
      }
      const int64_t now = pace_.clock();
      const int64_t deadline = std::min(
          last_progress_ms_ + pace_.timeout_ms,
          RateDeadlineMs(started_ms_, received_, pace_.timeout_ms, pace_.min_rate));
      if (now >= deadline) return false;  // stalled, or arriving too slowly
      int64_t wait = deadline - now;
      if (pace_.poll_in_slices) wait = std::min(wait, kSweepIntervalMs);
      pollfd p{fd_, POLLIN, 0};
      int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(wait, 1 << 30)));
      if (ready == 0 || (ready < 0 && errno == EINTR)) continue;  // see the clock
      if (ready < 0) return false;
      char chunk[kReadChunk];
      ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return false;  // the client stopped sending, or the server closed
      buffer_.append(chunk, static_cast<size_t>(n));
      received_ += n;
      last_progress_ms_ = pace_.clock();
    }
  }

  bool complete() const { return complete_; }
  std::string TakeLeftover() { return std::move(buffer_); }

 private:
  int fd_;
  std::string buffer_;
  BodyDecoder decoder_;
  int64_t max_bytes_;
  BodyPace pace_;
  int64_t started_ms_;
  int64_t last_progress_ms_;
  int64_t received_;  // bytes from the socket, framing included (the rate rule's)
  int64_t delivered_ = 0;
  bool complete_ = false;
};

enum class Phase {
  kReadingHead,   // waiting for (the rest of) a request head; idle if nothing read
  kReadingBody,   // the event loop buffers an admitted request's body
  kWorking,       // a worker serves the request
  kBodyOnWorker,  // a worker serves the request and reads its body from the socket
  // A streamed-body request waiting, body unread, for one of the max_streamed_bodies
  // turns (then kBodyOnWorker).
  kAwaitingStreamSlot,
  kWriting,    // the response is being sent
  kLingering,  // final response sent; dropping unread input before closing
};

struct Connection {
  uint64_t id = 0;
  int fd = -1;
  Phase phase = Phase::kReadingHead;
  uint32_t events = 0;  // registered epoll interest
  bool registered = false;
  bool peer_closed = false;   // read EOF: the client sends nothing more
  bool close_after = false;   // close once the current response is sent
  bool doomed = false;        // close as soon as the worker gives the socket back
  int64_t last_activity = 0;  // ms: accept, end of the last response, or progress
  uint64_t idle_order = 0;    // when it last became idle, in order (for eviction)
  int64_t head_started = 0;   // ms: first byte of the current head (0 = none yet)
  std::string in;             // received and not yet parsed
  size_t head_scan = 0;       // where FindHeadEnd resumes in `in`
  // The request being read.
  std::shared_ptr<RequestHead> head;
  int route = -1;
  int64_t max_body = 0;
  std::unique_ptr<BodyDecoder> decoder;
  std::unique_ptr<GzipInflater> inflater;
  std::string compressed;  // decoded but not yet inflated body bytes
  int64_t compressed_total = 0;
  int64_t body_started = 0;   // ms: the event loop began reading the body
  int64_t body_received = 0;  // body bytes from the socket, framing included
  // The response being sent.
  bool responding = false;
  std::string out;
  size_t out_pos = 0;
  std::shared_ptr<ResponseChannel> channel;
  bool channel_complete = false;
  size_t lingered = 0;
  int64_t budgeted = 0;  // body bytes counted in buffered_body_bytes_
  // The last request's body was not read (refused from its head, or cut short): the
  // connection closes after the response, lingering for the client's sake.
  bool body_unread = false;
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServer* owner, HttpServerOptions options, HttpHandler* handler)
      : owner_(owner),
        options_(std::move(options)),
        handler_(handler),
        mailbox_(std::make_shared<Mailbox>()),
        max_streamed_(options_.max_streamed_bodies > 0
                          ? options_.max_streamed_bodies
                          : std::max(1, options_.worker_threads / 2)) {
    manual_clock_ = static_cast<bool>(options_.clock_ms);
    if (!manual_clock_) options_.clock_ms = SteadyNowMs;
  }

  ~Impl() {
    {
      std::lock_guard lock(mailbox_->mu);
      mailbox_->closed = true;
      for (Completion& c : mailbox_->completions) {
        if (c.channel) c.channel->Break();
      }
      mailbox_->completions.clear();
      if (mailbox_->event_fd >= 0) close(mailbox_->event_fd);
      mailbox_->event_fd = -1;
    }
    if (listen_fd_ >= 0) close(listen_fd_);
    if (epoll_fd_ >= 0) close(epoll_fd_);
  }

  Status Bind(int* bound_port, size_t* max_connections) {
    // Each connection is a file: allow as many as the hard limit permits.
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
      limit.rlim_cur = limit.rlim_max;
      setrlimit(RLIMIT_NOFILE, &limit);
      getrlimit(RLIMIT_NOFILE, &limit);
    }
    max_connections_ = options_.max_connections;
    if (limit.rlim_cur != RLIM_INFINITY) {
      size_t usable = limit.rlim_cur > 1024 ? limit.rlim_cur - 512 : limit.rlim_cur / 2;
      max_connections_ = std::min(max_connections_, usable);
    }
    *max_connections = max_connections_;

    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    std::string host = options_.host;
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    std::string port = std::to_string(options_.port);
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || !found) {
      return Unavailable("cannot resolve listen address " + options_.host);
    }
    std::string last_error = "no address";
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                      a->ai_protocol);
      if (fd < 0) continue;
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 4096) == 0) {
        listen_fd_ = fd;
        break;
      }
      last_error = std::strerror(errno);
      close(fd);
    }
    freeaddrinfo(found);
    if (listen_fd_ < 0) {
      return Unavailable("cannot bind " + options_.host + ":" + port + " (" + last_error +
                         "; address in use?)");
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length);
    *bound_port = ntohs(bound.ss_family == AF_INET6
                            ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);

    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    int event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || event_fd < 0) return Unavailable("cannot create epoll");
    mailbox_->event_fd = event_fd;
    AddToEpoll(listen_fd_, kListenerId, EPOLLIN);
    AddToEpoll(event_fd, kMailboxId, EPOLLIN);
    return Status::OK();
  }

  void Stop() {
    stop_requested_.store(true);
    mailbox_->Signal();
  }

  void Serve() {
    workers_ = std::make_unique<WorkerPool>(options_.worker_threads,
                                            options_.max_queued_requests);
    epoll_event events[256];
    int64_t next_sweep = options_.clock_ms() + kSweepIntervalMs;
    while (true) {
      int n = epoll_wait(epoll_fd_, events, 256, static_cast<int>(kSweepIntervalMs));
      now_ = options_.clock_ms();
      for (int i = 0; i < n; ++i) {
        uint64_t id = events[i].data.u64;
        if (id == kListenerId) {
          AcceptAll();
        } else if (id == kMailboxId) {
          uint64_t count;
          ssize_t r = read(mailbox_->event_fd, &count, sizeof(count));
          (void)r;
        } else {
          OnSocketEvent(id, events[i].events);
        }
      }
      DrainMailbox();
      ProcessReady();
      if (stop_requested_.load() && !stopping_) BeginStop();
      if (now_ >= next_sweep) {
        Sweep();
        next_sweep = now_ + kSweepIntervalMs;
      }
      if (stopping_) {
        if (connections_.empty()) break;
        if (now_ >= stop_deadline_) {
          std::vector<uint64_t> ids;
          for (auto& [id, c] : connections_) ids.push_back(id);
          for (uint64_t id : ids) {
            if (Connection* c = Find(id)) Close(c);
          }
          // Sockets lent to workers close when the worker returns; wait for those.
          if (connections_.empty()) break;
        }
      }
    }
    {
      // From now on a worker's response is dropped and its provider released at once
      // (Mailbox::Post breaks the channel), so no worker waits for a loop that is gone.
      std::lock_guard lock(mailbox_->mu);
      mailbox_->closed = true;
      for (Completion& c : mailbox_->completions) {
        if (c.channel) c.channel->Break();
      }
      mailbox_->completions.clear();
    }
    for (auto& [id, c] : connections_) {
      if (c->channel) c->channel->Break();
    }
    workers_->Shutdown();
    for (auto& [id, c] : connections_) {
      if (c->channel) c->channel->Break();
      close(c->fd);
    }
    connections_.clear();
    owner_->connection_count_.store(0);
  }

 private:
  // --- epoll bookkeeping ---

  void AddToEpoll(int fd, uint64_t id, uint32_t events) {
    epoll_event e{};
    e.events = events;
    e.data.u64 = id;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
  }

  void UpdateInterest(Connection* c) {
    if (!c->registered) return;
    uint32_t want = 0;
    switch (c->phase) {
      case Phase::kReadingHead:
      case Phase::kReadingBody:
      case Phase::kLingering:
        if (!c->peer_closed) want |= EPOLLIN;
        break;
      case Phase::kWorking:
      case Phase::kWriting:
        // Read ahead (pipelined requests, or the client's EOF) up to a bound.
        if (!c->peer_closed && c->in.size() < options_.max_head_bytes + kMaxReadAhead) {
          want |= EPOLLIN;
        }
        break;
      case Phase::kBodyOnWorker:
      case Phase::kAwaitingStreamSlot:  // unread until its turn: TCP holds the client
        break;
    }
    if (c->out_pos < c->out.size()) want |= EPOLLOUT;
    if (want == c->events) return;
    epoll_event e{};
    e.events = want;
    e.data.u64 = c->id;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &e);
    c->events = want;
  }

  Connection* Find(uint64_t id) {
    auto it = connections_.find(id);
    return it == connections_.end() ? nullptr : it->second.get();
  }

  static bool IsIdle(const Connection& c) {
    return c.phase == Phase::kReadingHead && c.in.empty() && !c.responding;
  }

  // --- accepting ---

  void AcceptAll() {
    while (!stopping_) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE) {
          // Out of files: make room from an idle connection, else pause accepting
          // until the next sweep (level-triggered, the listener would spin).
          if (!EvictOldestIdle()) PauseAccepting();
        }
        return;
      }
      if (connections_.size() >= max_connections_ && !EvictOldestIdle()) {
        close(fd);  // full of busy connections: refuse this one
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      auto c = std::make_unique<Connection>();
      c->id = next_id_++;
      c->fd = fd;
      c->last_activity = now_;
      c->idle_order = ++idle_counter_;
      c->events = EPOLLIN;
      c->registered = true;
      AddToEpoll(fd, c->id, EPOLLIN);
      connections_.emplace(c->id, std::move(c));
      owner_->connection_count_.store(connections_.size());
    }
  }

  bool EvictOldestIdle() {
    Connection* oldest = nullptr;
    for (auto& [id, c] : connections_) {
      if (IsIdle(*c) && (!oldest || c->idle_order < oldest->idle_order)) {
        oldest = c.get();
      }
    }
    if (!oldest) return false;
    Close(oldest);
    return true;
  }

  void PauseAccepting() {
    if (accept_paused_) return;
    accept_paused_ = true;
    epoll_event e{};
    e.data.u64 = kListenerId;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &e);
  }

  void ResumeAccepting() {
    if (!accept_paused_ || stopping_) return;
    accept_paused_ = false;
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.u64 = kListenerId;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &e);
  }

  // --- closing ---

  void Close(Connection* c) {
    ReleaseBodyBudget(c);
    if (c->channel) {
      c->channel->Break();
      c->channel.reset();
    }
    if (c->phase == Phase::kBodyOnWorker) {
      // The worker is reading this socket: wake it (reads fail) and close the file
      // when it hands the socket back.
      shutdown(c->fd, SHUT_RDWR);
      c->doomed = true;
      return;
    }
    if (c->registered) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
    close(c->fd);
    connections_.erase(c->id);
    owner_->connection_count_.store(connections_.size());
  }

  // Ends a connection after its last response: if input may still be arriving (a body
  // left unread), half-close and drop input for a moment so the client reads the
  // response instead of a reset; else close now.
  void FinishConnection(Connection* c, bool input_pending) {
    if (!input_pending || c->peer_closed || stopping_) {
      Close(c);
      return;
    }
    shutdown(c->fd, SHUT_WR);
    c->phase = Phase::kLingering;
    c->last_activity = now_;
    c->in.clear();
    c->lingered = 0;
    UpdateInterest(c);
  }

  // --- reading ---

  void OnSocketEvent(uint64_t id, uint32_t events) {
    Connection* c = Find(id);
    if (!c) return;
    if ((events & EPOLLERR) || ((events & EPOLLHUP) && c->peer_closed)) {
      Close(c);  // reset, or fully closed: nobody to answer
      return;
    }
    if (c->phase == Phase::kAwaitingStreamSlot) {
      // Nothing is read while it waits; a hang-up (level-triggered) ends it.
      if (events & EPOLLHUP) Close(c);
      return;
    }
    if (events & (EPOLLIN | EPOLLHUP)) {
      if (!ReadInput(c)) return;
    }
    if ((events & EPOLLOUT) && (c = Find(id)) != nullptr) Flush(c);
  }

  // Returns false if the connection was closed.
  bool ReadInput(Connection* c) {
    const uint64_t id = c->id;
    char chunk[kReadChunk];
    // A few reads per event at most, so one fast client cannot starve the others.
    for (int round = 0; round < 4; ++round) {
      if (c->phase == Phase::kBodyOnWorker || c->phase == Phase::kAwaitingStreamSlot) {
        return true;
      }
      ssize_t n = recv(c->fd, chunk, sizeof(chunk), 0);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EINTR) continue;
        Close(c);
        return false;
      }
      if (n == 0) {
        c->peer_closed = true;
        break;
      }
      c->last_activity = now_;
      if (c->phase == Phase::kReadingBody) c->body_received += n;
      if (c->phase == Phase::kLingering) {
        c->lingered += static_cast<size_t>(n);
        if (c->lingered > kLingerBytes) {
          Close(c);
          return false;
        }
        continue;
      }
      c->in.append(chunk, static_cast<size_t>(n));
      // A short read emptied the socket: skip the recv that would say EAGAIN (a FIN
      // behind the data makes the socket readable again).
      const bool drained = static_cast<size_t>(n) < sizeof(chunk);
      if (c->phase == Phase::kWorking || c->phase == Phase::kWriting) {
        if (drained || c->in.size() >= options_.max_head_bytes + kMaxReadAhead) break;
        continue;
      }
      ProcessInput(c);
      if ((c = Find(id)) == nullptr) return false;
      if (drained) break;
    }
    if (c->phase == Phase::kLingering && c->peer_closed) {
      Close(c);
      return false;
    }
    if (c->peer_closed) {
      ProcessInput(c);
      if ((c = Find(id)) == nullptr) return false;
      // Nothing in flight and no complete request left: the client is done.
      if ((c->phase == Phase::kReadingHead || c->phase == Phase::kReadingBody) &&
          !c->responding) {
        Close(c);
        return false;
      }
    }
    UpdateInterest(c);
    return true;
  }

  // Parses and admits requests from c->in while the connection is free to take one.
  void ProcessInput(Connection* c) {
    const uint64_t id = c->id;
    while (true) {
      if (c->phase == Phase::kReadingHead) {
        if (c->responding || c->close_after || stopping_) return;
        // Blank lines before a request line are ignored (RFC 9112 2.2).
        size_t skip = 0;
        while (skip < c->in.size() && (c->in[skip] == '\r' || c->in[skip] == '\n')) {
          ++skip;
        }
        if (skip > 0) c->in.erase(0, skip);
        if (c->in.empty()) return;
        if (c->head_started == 0) c->head_started = now_;
        size_t end = FindHeadEnd(c->in, c->head_scan);
        if (end == std::string::npos) {
          if (c->in.size() > options_.max_head_bytes) {
            RespondError(c, 431,
                         "the request head is larger than " +
                             std::to_string(options_.max_head_bytes) + " bytes");
          } else {
            c->head_scan = c->in.size();
          }
          return;
        }
        if (end > options_.max_head_bytes) {
          RespondError(c, 431,
                       "the request head is larger than " +
                           std::to_string(options_.max_head_bytes) + " bytes");
          return;
        }
        auto head = std::make_shared<RequestHead>();
        ParseError error;
        bool parsed = ParseRequestHead(std::string_view(c->in).substr(0, end),
                                       options_.max_headers, head.get(), &error);
        c->in.erase(0, end);
        c->head_scan = 0;
        c->head_started = 0;
        if (!parsed) {
          RespondError(c, error.status, error.message);
          return;
        }
        AdmitRequest(c, std::move(head));
        if ((c = Find(id)) == nullptr) return;
        continue;
      }
      if (c->phase == Phase::kReadingBody) {
        if (!ReadBody(c)) return;
        continue;
      }
      return;
    }
  }

  void AdmitRequest(Connection* c, std::shared_ptr<RequestHead> head) {
    Admission admission;
    try {
      admission = handler_->Admit(head->request);
    } catch (const std::exception& e) {
      admission.refusal = std::make_unique<Response>(
          handler_->ErrorResponse(500, std::string("admission failed: ") + e.what()));
    }
    if (!head->keep_alive) c->close_after = true;
    if (admission.refusal) {
      // Refused from the head: the body (if any) is never read.
      if (head->has_body()) c->close_after = true;
      SendResponse(c, *admission.refusal, head->request.method == "HEAD",
                   head->has_body());
      return;
    }
    c->head = std::move(head);
    c->route = admission.route;
    c->max_body = admission.max_body_bytes;
    RequestHead& h = *c->head;
    if (!h.has_body()) {
      Dispatch(c);
      return;
    }
    if (!h.chunked && h.content_length > admission.max_body_bytes) {
      RespondTooLarge(c);  // refused from its Content-Length, unread
      return;
    }
    BodyDecoder decoder =
        h.chunked ? BodyDecoder::Chunked() : BodyDecoder::Length(h.content_length);
    if (admission.streamed_body) {
      if (streamed_active_ >= max_streamed_) {
        // Every streamed turn is taken: wait, unread, for one (AdmitWaitingStreams).
        c->decoder = std::make_unique<BodyDecoder>(std::move(decoder));
        c->phase = Phase::kAwaitingStreamSlot;
        c->last_activity = now_;
        stream_waiters_.push_back(c->id);
        UpdateInterest(c);
        return;
      }
      DispatchStreamed(c, std::move(decoder));
      return;
    }
    if (h.expect_continue) SendContinue(c);
    c->decoder = std::make_unique<BodyDecoder>(std::move(decoder));
    c->inflater = h.gzip ? std::make_unique<GzipInflater>() : nullptr;
    c->compressed.clear();
    c->compressed_total = 0;
    c->phase = Phase::kReadingBody;
    c->last_activity = now_;
    c->body_started = now_;
    c->body_received = static_cast<int64_t>(c->in.size());  // read with the head
  }

  // Tells a client that waits for it (Expect: 100-continue) to send the body.
  static void SendContinue(Connection* c) {
    static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    // The output buffer is empty between responses; a short write is all but
    // impossible, and then the client just sends the body after its own timeout.
    ssize_t sent = send(c->fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL);
    (void)sent;
  }

  // Gives free streamed-body turns to the waiting requests, oldest first.
  void AdmitWaitingStreams() {
    while (streamed_active_ < max_streamed_ && !stream_waiters_.empty()) {
      const uint64_t id = stream_waiters_.front();
      stream_waiters_.pop_front();
      Connection* c = Find(id);
      if (!c || c->phase != Phase::kAwaitingStreamSlot) continue;  // gone meanwhile
      BodyDecoder decoder = std::move(*c->decoder);
      c->decoder.reset();
      DispatchStreamed(c, std::move(decoder));
    }
  }

  // Decodes buffered input into the request body. Returns true when the request was
  // dispatched (or the connection answered), false when more input is needed.
  bool ReadBody(Connection* c) {
    if (c->in.empty()) return false;
    RequestHead& h = *c->head;
    std::string& body = h.request.body;
    const size_t limit = static_cast<size_t>(c->max_body);
    size_t consumed = 0;
    BodyDecoder::State state;
    if (!c->inflater) {
      // One byte more than allowed tells an oversized chunked body.
      size_t room = limit + 1 - std::min(body.size(), limit + 1);
      state = c->decoder->Decode(c->in, &body, room, &consumed);
      if (body.size() > limit) {
        RespondTooLarge(c);
        return true;
      }
    } else {
      c->compressed.clear();
      state = c->decoder->Decode(c->in, &c->compressed, c->in.size(), &consumed);
      c->compressed_total += static_cast<int64_t>(c->compressed.size());
      if (c->compressed_total > c->max_body) {
        RespondTooLarge(c);
        return true;
      }
      GzipInflater::State inflated = c->inflater->Inflate(c->compressed, &body, limit);
      if (inflated == GzipInflater::State::kTooLarge) {
        RespondTooLarge(c);
        return true;
      }
      if (inflated == GzipInflater::State::kError) {
        c->close_after = true;
        RespondError(c, 400, c->inflater->error(), /*input_pending=*/true);
        return true;
      }
    }
    c->in.erase(0, consumed);
    buffered_body_bytes_ += static_cast<int64_t>(body.size()) - c->budgeted;
    c->budgeted = static_cast<int64_t>(body.size());
    if (buffered_body_bytes_ > options_.max_buffered_body_bytes) {
      c->close_after = true;
      RespondError(c, 503,
                   "the server is buffering too many request bodies; retry the request",
                   /*input_pending=*/true);
      return true;
    }
    if (state == BodyDecoder::State::kError) {
      c->close_after = true;
      RespondError(c, 400, "malformed chunked body: " + c->decoder->error(),
                   /*input_pending=*/true);
      return true;
    }
    if (state == BodyDecoder::State::kMore) return false;
    if (c->inflater && !c->inflater->finished()) {
      c->close_after = true;
      RespondError(c, 400, "the gzip body ends before its gzip stream does");
      return true;
    }
    c->decoder.reset();
    c->inflater.reset();
    c->compressed = std::string();
    Dispatch(c);
    return true;
  }

  // The connection's body no longer counts against max_buffered_body_bytes (it went to
  // a worker, or was dropped).
  void ReleaseBodyBudget(Connection* c) {
    buffered_body_bytes_ -= c->budgeted;
    c->budgeted = 0;
  }

  void RespondTooLarge(Connection* c) {
    ReleaseBodyBudget(c);
    c->close_after = true;
    Response response = handler_->TooLargeResponse(c->max_body);
    c->head.reset();
    c->decoder.reset();
    c->inflater.reset();
    SendResponse(c, response, false, /*input_pending=*/true);
  }

  // --- handing requests to workers ---

  void Dispatch(Connection* c) {
    ReleaseBodyBudget(c);
    c->phase = Phase::kWorking;
    std::shared_ptr<RequestHead> head = std::move(c->head);
    const uint64_t id = c->id;
    const int route = c->route;
    const bool close_after = c->close_after;
    auto task = [this, id, head, route, close_after] {
      Response response;
      RunHandler(head->request, response, route, nullptr);
      if (response.deferred) {
        AttachDeferred(*response.deferred, mailbox_, id, head->request.method == "HEAD",
                       close_after);
        return;
      }
      Respond(id, head->request, response, close_after, Completion{});
    };
    if (!workers_->TrySubmit(std::move(task))) {
      c->phase = Phase::kReadingHead;
      RespondError(c, 503, "the server is overloaded; retry the request");
      return;
    }
    ++in_flight_;
    UpdateInterest(c);
  }

  // REQUIRES: a streamed turn is free (streamed_active_ < max_streamed_).
  void DispatchStreamed(Connection* c, BodyDecoder decoder) {
    if (c->head->expect_continue) SendContinue(c);
    std::shared_ptr<RequestHead> head = std::move(c->head);
    const uint64_t id = c->id;
    const int fd = c->fd;
    const int route = c->route;
    const int64_t max_body = c->max_body;
    BodyPace pace{options_.body_timeout_ms, options_.body_min_rate, options_.clock_ms,
                  manual_clock_};
    auto buffered = std::make_shared<std::string>(std::move(c->in));
    c->in.clear();
    auto task = [this, id, fd, head, route, max_body, pace, buffered,
                 decoder = std::make_shared<BodyDecoder>(std::move(decoder))] {
      SocketBodyReader reader(fd, std::move(*buffered), std::move(*decoder), max_body,
                              pace);
      ContentReader read_body = [&reader](ContentReceiver receiver) {
        return reader.Read(receiver);
      };
      Response response;
      RunHandler(head->request, response, route, &read_body);
      if (response.deferred) {
        // The socket goes back to the loop with the response; a deferred one would
        // need the body read to its end first. No streamed route defers.
        response = handler_->ErrorResponse(
            500, "a route that reads its body as a stream cannot answer later");
      }
      Completion completion;
      completion.returns_socket = true;
      const bool complete = reader.complete();
      completion.leftover_input = reader.TakeLeftover();
      // A body not read to its end leaves the connection unusable for another request.
      Respond(id, head->request, response, !complete, std::move(completion));
    };
    // The worker owns the socket's input until it hands it back.
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    c->registered = false;
    c->events = 0;
    c->phase = Phase::kBodyOnWorker;
    if (!workers_->TrySubmit(std::move(task))) {
      c->phase = Phase::kReadingHead;
      c->registered = true;
      c->events = EPOLLIN;
      AddToEpoll(fd, id, EPOLLIN);
      c->close_after = true;
      RespondError(c, 503, "the server is overloaded; retry the request",
                   /*input_pending=*/true);
      return;
    }
    ++in_flight_;
    ++streamed_active_;
  }

  void RunHandler(Request& request, Response& response, int route,
                  const ContentReader* body) {
    try {
      handler_->Handle(request, response, route, body);
    } catch (const std::exception& e) {
      response =
          handler_->ErrorResponse(500, std::string("unexpected failure: ") + e.what());
    }
  }

  // On a worker: serializes the response and hands it to the loop; runs a content
  // provider here, with backpressure.
  void Respond(uint64_t id, const Request& request, Response& response, bool close_after,
               Completion completion) {
    const bool head_only = request.method == "HEAD";
    completion.connection = id;
    switch (response.body_kind) {
      case Response::BodyKind::kString:
        PostStringResponse(*mailbox_, std::move(completion), response, head_only,
                           close_after);
        return;
      case Response::BodyKind::kStream: {
        completion.close_after = true;
        completion.bytes = SerializeHead(response, -1, true);
        completion.channel = response.stream;
        if (head_only) response.stream->Close();
        mailbox_->Post(std::move(completion));
        return;
      }
      case Response::BodyKind::kSized:
      case Response::BodyKind::kChunked:
        break;
    }
    const bool sized = response.body_kind == Response::BodyKind::kSized;
    completion.close_after = close_after;
    completion.bytes = SerializeHead(
        response, sized ? static_cast<int64_t>(response.content_length) : -1,
        close_after);
    auto channel = std::make_shared<ResponseChannel>(options_.response_buffer_bytes,
                                                     /*chunked=*/!sized);
    completion.channel = channel;
    mailbox_->Post(std::move(completion));
    if (head_only) {
      channel->Close();
      return;
    }
    ChannelSink sink(channel.get());
    bool ok = true;
    try {
      if (sized) {
        while (ok && sink.written() < response.content_length) {
          size_t before = sink.written();
          ok = response.sized_provider(before, response.content_length - before, sink);
          if (ok && sink.written() == before) ok = false;  // no progress: give up
        }
      } else {
        while (ok && !sink.is_done()) {
          ok = response.chunked_provider(sink.written(), sink);
        }
      }
    } catch (const std::exception&) {
      ok = false;
    }
    if (ok) {
      channel->Finish();
    } else {
      // The body cannot be completed: the loop closes the connection (the client sees a
      // truncated response, never a wrong one).
      channel->Break();
    }
  }

  // --- mailbox ---

  void DrainMailbox() {
    std::vector<Completion> completions;
    std::vector<uint64_t> wakes;
    {
      std::lock_guard lock(mailbox_->mu);
      completions.swap(mailbox_->completions);
      wakes.swap(mailbox_->wakes);
    }
    for (Completion& completion : completions) OnCompletion(std::move(completion));
    AdmitWaitingStreams();
    for (uint64_t id : wakes) {
      if (Connection* c = Find(id)) Flush(c);
    }
  }

  void OnCompletion(Completion completion) {
    --in_flight_;
    if (completion.returns_socket) --streamed_active_;  // AdmitWaitingStreams reuses it
    Connection* c = Find(completion.connection);
    if (!c) {
      if (completion.channel) completion.channel->Break();
      return;
    }
    if (completion.returns_socket) {
      c->phase = Phase::kWorking;
      if (c->doomed) {
        c->phase = Phase::kWriting;
        Close(c);
        if (completion.channel) completion.channel->Break();
        return;
      }
      c->in = std::move(completion.leftover_input);
      // A body the handler did not read to its end may still be arriving.
      if (completion.close_after) c->body_unread = true;
      c->registered = true;
      c->events = 0;
      AddToEpoll(c->fd, c->id, 0);
    }
    if (completion.close_after || stopping_) c->close_after = true;
    c->phase = Phase::kWriting;
    c->responding = true;
    c->last_activity = now_;
    if (c->out_pos == c->out.size()) {
      c->out = std::move(completion.bytes);
      c->out_pos = 0;
    } else {
      c->out += completion.bytes;
    }
    c->channel = std::move(completion.channel);
    c->channel_complete = false;
    if (c->channel) {
      std::weak_ptr<Mailbox> mailbox = mailbox_;
      const uint64_t id = c->id;
      c->channel->Attach([mailbox, id] {
        if (auto box = mailbox.lock()) box->Wake(id);
      });
    }
    Flush(c);
  }

  // --- writing ---

  void Flush(Connection* c) {
    const uint64_t id = c->id;
    while (true) {
      if (c->out_pos == c->out.size()) {
        c->out.clear();
        c->out_pos = 0;
        if (c->channel && !c->channel_complete) {
          c->channel_complete = c->channel->Take(&c->out);
          if (c->out.empty() && !c->channel_complete) {
            if (c->channel->broken()) {
              // Broken by its producer (a provider that failed): the body cannot end
              // well, so the connection ends. (Not closed(): a body that finished
              // since Take is complete, and its wake is on the way.)
              Close(c);
              return;
            }
            break;  // wait for the producer
          }
          if (!c->out.empty()) continue;
        }
        if (c->responding) {
          ResponseDone(c);
          if (Find(id) == nullptr) return;
        }
        break;
      }
      ssize_t n = send(c->fd, c->out.data() + c->out_pos, c->out.size() - c->out_pos,
                       MSG_NOSIGNAL);
      if (n > 0) {
        c->out_pos += static_cast<size_t>(n);
        c->last_activity = now_;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && errno == EINTR) continue;
      Close(c);
      return;
    }
    UpdateInterest(c);
  }

  void ResponseDone(Connection* c) {
    c->responding = false;
    if (c->channel) {
      c->channel->Break();  // over: release the producer, run its on-close
      c->channel.reset();
    }
    if (c->out.capacity() > (64 << 10)) std::string().swap(c->out);
    if (c->close_after) {
      FinishConnection(c, c->body_unread);
      return;
    }
    c->phase = Phase::kReadingHead;
    c->last_activity = now_;
    c->idle_order = ++idle_counter_;
    c->head_started = 0;
    // Pipelined requests already received are parsed by the loop (ProcessReady), not
    // here: a client pipelining many requests answered at once must not recurse.
    ready_.push_back(c->id);
  }

  void ProcessReady() {
    while (!ready_.empty()) {
      std::vector<uint64_t> ready;
      ready.swap(ready_);
      for (uint64_t id : ready) {
        Connection* c = Find(id);
        if (!c || c->phase != Phase::kReadingHead || c->responding) continue;
        ProcessInput(c);
        if ((c = Find(id)) == nullptr) continue;
        if (c->peer_closed && c->phase == Phase::kReadingHead && !c->responding) {
          Close(c);  // a half-closed client with nothing more to ask
          continue;
        }
        UpdateInterest(c);
      }
    }
  }

  // Sends `response` as the answer to the request being read (an error the server or
  // Admit decided without a worker).
  void SendResponse(Connection* c, Response& response, bool head_only,
                    bool input_pending) {
    // Refusals and errors are string bodies (a provider would need a worker).
    const bool close_after = c->close_after;
    std::string bytes =
        SerializeHead(response, static_cast<int64_t>(response.body.size()), close_after);
    if (!head_only) bytes += response.body;
    c->phase = Phase::kWriting;
    c->responding = true;
    c->out += bytes;
    c->channel_complete = true;
    if (input_pending) {
      c->in.clear();  // what follows is the unread body, never a request
      c->body_unread = true;
    }
    const uint64_t id = c->id;
    Flush(c);
    if (Find(id) != nullptr) UpdateInterest(c);
  }

  void RespondError(Connection* c, int status, const std::string& message,
                    bool input_pending = false) {
    ReleaseBodyBudget(c);
    Response response = handler_->ErrorResponse(status, message);
    if (status == 503) response.set_header("Retry-After", "1");  // a passing overload
    if (status != 503) {
      // Malformed input or a timeout: the byte stream is out of step; close after.
      c->close_after = true;
      input_pending = true;
    }
    c->head.reset();
    c->decoder.reset();
    c->inflater.reset();
    SendResponse(c, response, false, input_pending);
  }

  // --- timeouts and shutdown ---

  void Sweep() {
    ResumeAccepting();
    std::vector<uint64_t> expired;
    std::vector<std::pair<uint64_t, int>> timed_out;  // answered with 408 first
    for (auto& [id, c] : connections_) {
      switch (c->phase) {
        case Phase::kReadingHead:
          if (c->responding) break;
          if (c->in.empty() && c->head_started == 0) {
            if (now_ - c->last_activity > options_.idle_timeout_ms) {
              expired.push_back(id);
            }
          } else if (c->head_started != 0 &&
                     now_ - c->head_started > options_.header_timeout_ms) {
            timed_out.emplace_back(id, 0);
          }
          break;
        case Phase::kReadingBody:
          if (now_ - c->last_activity > options_.body_timeout_ms) {
            timed_out.emplace_back(id, 1);
          } else if (now_ > RateDeadlineMs(c->body_started, c->body_received,
                                           options_.body_timeout_ms,
                                           options_.body_min_rate)) {
            timed_out.emplace_back(id, 2);
          }
          break;
        case Phase::kAwaitingStreamSlot:
          if (now_ - c->last_activity > options_.body_timeout_ms) {
            timed_out.emplace_back(id, 3);
          }
          break;
        case Phase::kWriting:
          if (c->out_pos < c->out.size() &&
              now_ - c->last_activity > options_.write_timeout_ms) {
            expired.push_back(id);
          }
          break;
        case Phase::kLingering:
          if (now_ - c->last_activity > kLingerMs) expired.push_back(id);
          break;
        case Phase::kWorking:
        case Phase::kBodyOnWorker:
          break;
      }
    }
    for (uint64_t id : expired) {
      if (Connection* c = Find(id)) Close(c);
    }
    for (auto [id, kind] : timed_out) {
      Connection* c = Find(id);
      if (!c) continue;
      c->close_after = true;
      switch (kind) {
        case 0:
          RespondError(c, 408, "the request head did not arrive in time");
          break;
        case 1:
          RespondError(c, 408, "the request body stopped arriving", true);
          break;
        case 2:
          RespondError(c, 408,
                       "the request body arrives too slowly (under " +
                           std::to_string(options_.body_min_rate) +
                           " bytes/s on average)",
                       true);
          break;
        default:
          RespondError(c, 503, "too many uploads are being received; retry the request",
                       /*input_pending=*/true);
          break;
      }
    }
  }

  void BeginStop() {
    stopping_ = true;
    stop_deadline_ = now_ + options_.shutdown_grace_ms;
    if (listen_fd_ >= 0) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
      close(listen_fd_);
      listen_fd_ = -1;
    }
    // Connections with nothing in flight close now; the others after their response.
    std::vector<uint64_t> idle;
    for (auto& [id, c] : connections_) {
      c->close_after = true;
      if ((c->phase == Phase::kReadingHead && !c->responding) ||
          c->phase == Phase::kReadingBody || c->phase == Phase::kLingering ||
          c->phase == Phase::kAwaitingStreamSlot) {
        idle.push_back(id);
      }
    }
    for (uint64_t id : idle) {
      if (Connection* c = Find(id)) Close(c);
    }
  }

  HttpServer* owner_;
  HttpServerOptions options_;
  HttpHandler* handler_;
  std::shared_ptr<Mailbox> mailbox_;
  const int max_streamed_;   // streamed bodies read at once (each holds a worker)
  int streamed_active_ = 0;  // connections in kBodyOnWorker
  // Connections that entered kAwaitingStreamSlot, in order (some may have left it).
  std::deque<uint64_t> stream_waiters_;
  bool manual_clock_ = false;  // options_.clock_ms was given
  std::unique_ptr<WorkerPool> workers_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  size_t max_connections_ = 0;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  std::vector<uint64_t> ready_;  // connections that finished a response
  uint64_t next_id_ = 2;
  uint64_t idle_counter_ = 0;
  int64_t buffered_body_bytes_ = 0;  // sum of Connection::budgeted
  int64_t now_ = 0;
  int64_t in_flight_ = 0;
  bool accept_paused_ = false;
  std::atomic<bool> stop_requested_{false};
  bool stopping_ = false;
  int64_t stop_deadline_ = 0;
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler* handler)
    : impl_(std::make_unique<Impl>(this, std::move(options), handler)) {}

HttpServer::~HttpServer() = default;

Status HttpServer::Bind() { return impl_->Bind(&bound_port_, &max_connections_); }

void HttpServer::Serve() { impl_->Serve(); }

void HttpServer::Stop() { impl_->Stop(); }

}  // namespace sheetlog::api::http
