#include "src/api/http/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "emulator/env/mutex.h"
#include "src/api/http/content_pump.h"
#include "src/api/http/http_parser.h"
#include "src/api/http/response_channel.h"
#include "src/api/http/response_framing.h"
#include "src/api/http/socket_body_reader.h"
#include "src/api/http/tls.h"
#include "src/api/http/transport.h"
#include "src/api/http/worker_pool.h"

namespace sheetlog::api::http {
namespace {

constexpr uint64_t kListenerId = 0;
constexpr uint64_t kMailboxId = 1;
constexpr size_t kReadChunk = 64 << 10;
// Input read ahead of the request being served (pipelined requests), beyond the head.
constexpr size_t kMaxReadAhead = 64 << 10;
// After a response that closes the connection while the client may still be sending
// (a body left unread, pipelined requests): half-close, then read and drop at most this
// much (or for this long) before closing, so the client reads the response rather than
// a reset.
constexpr size_t kLingerBytes = 4 << 20;
constexpr int64_t kLingerMs = 1000;
constexpr int64_t kSweepIntervalMs = 50;

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What a worker (or a deferred response's sender) hands back to the event loop.
struct Completion {
  uint64_t connection = 0;
  PreparedResponse response;
  // For requests whose body the worker read from the socket itself: the socket comes
  // back with the response.
  bool returns_socket = false;
  std::string leftover_input;  // bytes read past the body (the next request)
};

// Where workers and stream writers leave news for the event loop; shared so a
// StreamWriter or ResponseSender kept by a producer stays safe after the server is gone.
struct Mailbox {
  Mutex mu;
  std::vector<Completion> completions GUARDED_BY(mu);
  std::vector<uint64_t> wakes GUARDED_BY(mu);
  // Set before the loop starts and closed after it ends (under mu, as producers that
  // outlive the server may still notify).
  int event_fd = -1;
  bool closed GUARDED_BY(mu) = false;

  void NotifyLocked(bool was_empty) REQUIRES(mu) {
    if (was_empty && event_fd >= 0) {
      uint64_t one = 1;
      ssize_t n = write(event_fd, &one, sizeof(one));
      (void)n;  // a full counter already wakes the loop
    }
  }
  void Post(Completion completion) {
    MutexLock lock(&mu);
    if (closed) {
      if (completion.response.channel) completion.response.channel->Break();
      return;
    }
    bool was_empty = completions.empty() && wakes.empty();
    completions.push_back(std::move(completion));
    NotifyLocked(was_empty);
  }
  void Wake(uint64_t connection) {
    MutexLock lock(&mu);
    if (closed) return;
    bool was_empty = completions.empty() && wakes.empty();
    wakes.push_back(connection);
    NotifyLocked(was_empty);
  }
  void Signal() {
    MutexLock lock(&mu);
    NotifyLocked(true);
  }
  // From now on a response is dropped and its body's producer released at once, so no
  // producer waits for a loop that is gone.
  void CloseAndDrop() {
    MutexLock lock(&mu);
    closed = true;
    for (Completion& c : completions) {
      if (c.response.channel) c.response.channel->Break();
    }
    completions.clear();
  }
};

enum class Phase {
  kReadingHead,  // waiting for (the rest of) a request head; idle if nothing read
  kReadingBody,  // the event loop buffers an admitted request's body
  // A streamed-body request waiting, body unread, for one of the max_streamed_bodies
  // turns (then kBodyOnWorker).
  kAwaitingStreamSlot,
  kHandling,      // a worker serves the request
  kBodyOnWorker,  // a worker serves the request and reads its body from the socket
  kResponding,    // the response is being sent
  kLingering,     // final response sent, write side shut; dropping input before closing
};

// The request timeouts the sweep enforces by answering (then closing). A TLS
// connection whose handshake is not complete at the head timeout cannot be answered
// (the answer would wait for the handshake): the sweep closes it outright instead.
enum class Timeout {
  kHead,            // header_timeout_ms from the head's first byte: 408
  kBodyStalled,     // no body byte for body_timeout_ms: 408
  kBodyTooSlow,     // under body_min_rate on average: 408
  kStreamSlotWait,  // no streamed-body turn within body_timeout_ms: 503
};

// One client connection. Owned by Impl::connections_ and freed only by Impl::Reap, at
// the end of an event-loop turn when no frame of the loop can still hold it: code that
// closes a connection marks it `closed` and every step checks that flag, so a
// connection is never used after it is freed, however deep the call that closed it.
struct Connection {
  uint64_t id = 0;
  int fd = -1;
  std::unique_ptr<Transport> transport;  // the socket in the clear, or TLS over it
  // A TLS read waits for the socket to be writable, or a TLS write for it to be
  // readable (handshake messages).
  bool read_wants_write = false;
  bool write_wants_read = false;
  Phase phase = Phase::kReadingHead;
  uint32_t events = 0;  // registered epoll interest
  bool registered = false;
  bool closed = false;        // closed: waits for Reap (or for its worker, if lent)
  bool lent = false;          // a worker reads the socket (kBodyOnWorker)
  bool peer_closed = false;   // read EOF: the client sends nothing more
  bool close_after = false;   // close once the current response is sent
  int64_t last_activity = 0;  // ms: accept, end of the last response, or progress
  uint64_t idle_order = 0;    // when it last became idle, in order (for eviction)
  int64_t head_started = 0;   // ms: first byte of the current head (0 = none yet)
  std::string in;             // received and not yet parsed
  size_t head_scan = 0;       // where the head scan resumes in `in`
  // The request being read, and what framing its response needs.
  std::shared_ptr<RequestHead> head;
  RequestFacts facts;
  int route = -1;
  int64_t max_body = 0;
  std::unique_ptr<BodyDecoder> decoder;
  std::unique_ptr<GzipInflater> inflater;
  std::string compressed;  // decoded but not yet inflated body bytes
  int64_t compressed_total = 0;
  int64_t body_started = 0;   // ms: the event loop began reading the body
  int64_t body_received = 0;  // body bytes from the socket, framing included
  int64_t budgeted = 0;       // body bytes counted in buffered_body_bytes_
  // The last request's body was not read (refused from its head, or cut short): what
  // follows on the socket is not a request.
  bool body_unread = false;
  // The response being sent.
  std::string out;
  size_t out_pos = 0;
  std::shared_ptr<ResponseChannel> channel;
  bool channel_complete = true;
  bool rate_limited = false;     // held to response_min_rate (not an event stream)
  int64_t response_started = 0;  // ms
  int64_t response_sent = 0;     // bytes of this response sent
  int64_t last_write = 0;        // ms: the response began, or the socket took bytes
  size_t lingered = 0;
};

// The facts of a request whose head could not be parsed: framed as HTTP/1.1, and the
// connection closes.
RequestFacts UnparsedRequestFacts() {
  RequestFacts facts;
  facts.keep_alive = false;
  return facts;
}

// Makes `sender` deliver to connection `id` through `mailbox` alone, so that a response
// sent after the server is gone is merely dropped (Mailbox::closed).
void AttachDeferred(ResponseSender& sender, std::shared_ptr<Mailbox> mailbox, uint64_t id,
                    RequestFacts facts, bool server_close, size_t buffer_bytes) {
  sender.Attach([mailbox = std::move(mailbox), id, facts, server_close,
                 buffer_bytes](std::optional<Response> reply) {
    if (!reply || reply->body_kind != Response::BodyKind::kString) {
      // The layers above always send a string body; this is the last resort.
      reply.emplace();
      reply->status = 500;
      reply->set_content("the request's handler gave no response\n",
                         "text/plain; charset=utf-8");
    }
    Completion completion;
    completion.connection = id;
    completion.response = PrepareResponse(facts, *reply, server_close, buffer_bytes);
    mailbox->Post(std::move(completion));
  });
}

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
                          : std::max(1, options_.worker_threads / 2)),
        tls_enabled_(options_.tls != nullptr),
        tls_(options_.tls) {
    manual_clock_ = static_cast<bool>(options_.clock_ms);
    if (!manual_clock_) options_.clock_ms = SteadyNowMs;
  }

  ~Impl() {
    {
      MutexLock lock(&mailbox_->mu);
      mailbox_->closed = true;
      for (Completion& c : mailbox_->completions) {
        if (c.response.channel) c.response.channel->Break();
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
    WorkerPool* pool = workers_.get();
    submit_ = [pool](std::function<void()> task) { pool->Submit(std::move(task)); };
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
        } else if (Connection* c = Find(id)) {
          OnSocketEvent(*c, events[i].events);
        }
      }
      DrainMailbox();
      RereadBuffered();
      if (stop_requested_.load() && !stopping_) BeginStop();
      if (now_ >= next_sweep) {
        Sweep();
        next_sweep = now_ + kSweepIntervalMs;
      }
      ProcessReady();
      if (stopping_ && now_ >= stop_deadline_) {
        for (auto& [id, c] : connections_) Close(*c);
      }
      Reap();
      // Sockets lent to workers are reaped when the worker gives them back.
      if (stopping_ && connections_.empty()) break;
    }
    mailbox_->CloseAndDrop();
    for (auto& [id, c] : connections_) {
      if (c->channel) c->channel->Break();
    }
    workers_->Shutdown();
    for (auto& [id, c] : connections_) close(c->fd);
    connections_.clear();
    owner_->connection_count_.store(0);
  }

 private:
  // --- epoll bookkeeping ---

  // Reads the connections whose TLS layer holds input epoll cannot see.
  void RereadBuffered() {
    std::vector<uint64_t> ids;
    ids.swap(rereads_);
    for (uint64_t id : ids) {
      Connection* c = Find(id);
      if (c && (c->events & EPOLLIN) && c->transport->HasBufferedInput()) ReadInput(*c);
    }
  }

  std::shared_ptr<TlsContext> CurrentTls() {
    MutexLock lock(&tls_mu_);
    return tls_;
  }

 public:
  void SetTls(std::shared_ptr<TlsContext> tls) {
    MutexLock lock(&tls_mu_);
    tls_ = std::move(tls);
  }

 private:
  void AddToEpoll(int fd, uint64_t id, uint32_t events) {
    epoll_event e{};
    e.events = events;
    e.data.u64 = id;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
  }

  void UpdateInterest(Connection& c) {
    if (!c.registered || c.closed) return;
    uint32_t want = 0;
    switch (c.phase) {
      case Phase::kReadingHead:
      case Phase::kReadingBody:
      case Phase::kLingering:
        if (!c.peer_closed) want |= EPOLLIN;
        break;
      case Phase::kHandling:
      case Phase::kResponding:
        // Read ahead (pipelined requests, or the client's EOF) up to a bound.
        if (!c.peer_closed && c.in.size() < options_.max_head_bytes + kMaxReadAhead) {
          want |= EPOLLIN;
        }
        break;
      case Phase::kBodyOnWorker:
      case Phase::kAwaitingStreamSlot:  // unread until its turn: TCP holds the client
        break;
    }
    if (c.out_pos < c.out.size()) want |= EPOLLOUT;
    // TLS: a read that waits for writability, a write that waits for readability.
    if (c.read_wants_write && (want & EPOLLIN)) want |= EPOLLOUT;
    if (c.write_wants_read && (want & EPOLLOUT)) want |= EPOLLIN;
    // Bytes TLS already took off the socket raise no event: read them next turn.
    if ((want & EPOLLIN) && c.transport->HasBufferedInput()) rereads_.push_back(c.id);
    if (want == c.events) return;
    epoll_event e{};
    e.events = want;
    e.data.u64 = c.id;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &e);
    c.events = want;
  }

  // A live connection, or nullptr if it is gone or closed.
  Connection* Find(uint64_t id) {
    auto it = connections_.find(id);
    if (it == connections_.end() || it->second->closed) return nullptr;
    return it->second.get();
  }

  // Whether a connection may be closed to make room for a new one, and how readily
  // (EvictForRoom takes the greatest). Idle: waiting, with nothing received or unsent,
  // between requests or for its first. A TLS connection still in its handshake is a
  // client on its way to a request: taken only when none is idle (never taking it
  // would let clients that never finish a handshake lock new ones out until the head
  // timeout).
  enum class Evictable { kNo, kWhenNoneIsIdle, kIdle };

  static Evictable EvictableAs(const Connection& c) {
    if (c.closed || c.phase != Phase::kReadingHead || !c.in.empty() ||
        c.out_pos != c.out.size()) {
      return Evictable::kNo;
    }
    return c.transport->handshake_complete() ? Evictable::kIdle
                                             : Evictable::kWhenNoneIsIdle;
  }

  // --- accepting ---

  void AcceptAll() {
    while (!stopping_) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE) {
          // Out of files: make room from an idle connection, else pause accepting
          // until the next sweep (level-triggered, the listener would spin). An evicted
          // connection's file is released at the end of this turn, and the listener,
          // still readable, brings the loop back to accept.
          if (!EvictForRoom()) PauseAccepting();
        }
        return;
      }
      if (live_connections_ >= max_connections_ && !EvictForRoom()) {
        close(fd);  // full of busy connections: refuse this one
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      auto c = std::make_unique<Connection>();
      c->id = next_id_++;
      c->fd = fd;
      std::shared_ptr<TlsContext> tls = CurrentTls();
      c->transport = tls ? MakeTlsTransport(fd, std::move(tls)) : MakePlainTransport(fd);
      // A TLS client must finish its handshake and its first head within
      // header_timeout, like the head alone (one still handshaking then is closed
      // without an answer: Sweep).
      if (tls_enabled_) c->head_started = now_;
      c->last_activity = now_;
      c->idle_order = ++idle_counter_;
      c->events = EPOLLIN;
      c->registered = true;
      AddToEpoll(fd, c->id, EPOLLIN);
      connections_.emplace(c->id, std::move(c));
      ++live_connections_;
      owner_->connection_count_.store(live_connections_);
    }
  }

  // Closes one connection to make room for a new one: the idle connection idle the
  // longest (EvictableAs); if none is idle, the TLS connection whose handshake began
  // first. Returns false, closing nothing, if every connection has a request under way
  // or partly received.
  bool EvictForRoom() {
    Connection* chosen = nullptr;
    Evictable chosen_as = Evictable::kNo;
    for (auto& [id, c] : connections_) {
      const Evictable as = EvictableAs(*c);
      if (as == Evictable::kNo) continue;
      if (chosen == nullptr || as > chosen_as ||
          (as == chosen_as && c->idle_order < chosen->idle_order)) {
        chosen = c.get();
        chosen_as = as;
      }
    }
    if (chosen == nullptr) return false;
    Close(*chosen);
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

  // Closes `c`: from here on nothing is read from or sent to it, its response's
  // producer is released, and it is freed by Reap at the end of this turn (or, if a
  // worker reads its socket, once the worker gives the socket back). Idempotent.
  void Close(Connection& c) {
    if (c.closed) return;
    c.closed = true;
    --live_connections_;
    owner_->connection_count_.store(live_connections_);
    ReleaseBodyBudget(c);
    if (c.channel) {
      c.channel->Break();
      c.channel.reset();
    }
    if (c.registered) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
      c.registered = false;
    }
    if (c.lent) {
      // The worker is reading this socket: wake it (reads fail); reaped when it hands
      // the socket back.
      shutdown(c.fd, SHUT_RDWR);
      return;
    }
    closed_.push_back(c.id);
  }

  // Frees the connections closed this turn. Called only from Serve's loop, between
  // turns, where no frame holds a connection.
  void Reap() {
    for (uint64_t id : closed_) {
      auto it = connections_.find(id);
      if (it == connections_.end()) continue;
      close(it->second->fd);
      connections_.erase(it);
    }
    closed_.clear();
  }

  // Ends a connection after its last response. If the client may still be sending
  // (it has not closed its side), half-close and drop its input for a moment, so it
  // reads the response (and the end of a close-delimited body) instead of a reset;
  // else close now.
  void FinishConnection(Connection& c) {
    if (c.peer_closed || stopping_) {
      Close(c);
      return;
    }
    c.transport->ShutdownWrite();
    c.phase = Phase::kLingering;
    c.last_activity = now_;
    c.in.clear();
    c.lingered = 0;
    UpdateInterest(c);
  }

  // --- reading ---

  void OnSocketEvent(Connection& c, uint32_t events) {
    if ((events & EPOLLERR) || ((events & EPOLLHUP) && c.peer_closed)) {
      Close(c);  // reset, or fully closed: nobody to answer
      return;
    }
    if (c.phase == Phase::kAwaitingStreamSlot) {
      // Nothing is read while it waits; a hang-up (level-triggered) ends it.
      if (events & EPOLLHUP) Close(c);
      return;
    }
    if ((events & (EPOLLIN | EPOLLHUP)) || ((events & EPOLLOUT) && c.read_wants_write)) {
      ReadInput(c);
    }
    if (!c.closed &&
        ((events & EPOLLOUT) || ((events & EPOLLIN) && c.write_wants_read))) {
      Flush(c);
    }
  }

  void ReadInput(Connection& c) {
    char chunk[kReadChunk];
    // A few reads per event at most, so one fast client cannot starve the others.
    for (int round = 0; round < 4; ++round) {
      if (c.closed || c.phase == Phase::kBodyOnWorker ||
          c.phase == Phase::kAwaitingStreamSlot) {
        return;
      }
      size_t got = 0;
      Transport::Io io = c.transport->Read(chunk, sizeof(chunk), &got);
      c.read_wants_write = io == Transport::Io::kWouldBlock && c.transport->wants_write();
      if (io == Transport::Io::kWouldBlock) break;
      if (io == Transport::Io::kError) {
        Close(c);
        return;
      }
      if (io == Transport::Io::kEof) {
        c.peer_closed = true;
        break;
      }
      const ssize_t n = static_cast<ssize_t>(got);
      c.last_activity = now_;
      if (c.phase == Phase::kLingering) {
        c.lingered += static_cast<size_t>(n);
        if (c.lingered > kLingerBytes) {
          Close(c);
          return;
        }
        continue;
      }
      if (c.phase == Phase::kReadingBody) c.body_received += n;
      c.in.append(chunk, static_cast<size_t>(n));
      // A short read emptied the socket: skip the recv that would say EAGAIN (a FIN
      // behind the data makes the socket readable again).
      const bool drained = static_cast<size_t>(n) < sizeof(chunk);
      if (c.phase == Phase::kHandling || c.phase == Phase::kResponding) {
        if (drained || c.in.size() >= options_.max_head_bytes + kMaxReadAhead) break;
        continue;
      }
      ProcessInput(c);
      if (drained) break;
    }
    if (c.closed) return;
    if (c.peer_closed) {
      if (c.phase == Phase::kLingering) {
        Close(c);
        return;
      }
      ProcessInput(c);
      if (c.closed) return;
      // Nothing in flight and no complete request left: the client is done.
      if (c.phase == Phase::kReadingHead || c.phase == Phase::kReadingBody) {
        Close(c);
        return;
      }
    }
    UpdateInterest(c);
  }

  // Parses and admits requests from c.in while the connection is free to take one.
  void ProcessInput(Connection& c) {
    while (!c.closed) {
      if (c.phase == Phase::kReadingHead) {
        if (c.close_after || stopping_) return;
        // Blank lines before a request line are ignored (RFC 9112 2.2).
        size_t skip = 0;
        while (skip < c.in.size() && (c.in[skip] == '\r' || c.in[skip] == '\n')) ++skip;
        if (skip > 0) c.in.erase(0, skip);
        if (c.in.empty()) return;
        if (c.head_started == 0) c.head_started = now_;
        c.facts = UnparsedRequestFacts();
        HeadScan scan = ScanHead(c.in, c.head_scan);
        if (scan.bare_lf) {
          RespondError(c, 400,
                       "a line of the request head ends in a bare LF (want CRLF)");
          return;
        }
        if (scan.end == std::string::npos || scan.end > options_.max_head_bytes) {
          if (c.in.size() > options_.max_head_bytes || scan.end != std::string::npos) {
            RefuseOversizedHead(c);
          } else {
            c.head_scan = c.in.size();
          }
          return;
        }
        auto head = std::make_shared<RequestHead>();
        ParseError error;
        bool parsed = ParseRequestHead(std::string_view(c.in).substr(0, scan.end),
                                       options_.max_headers, head.get(), &error);
        c.in.erase(0, scan.end);
        c.head_scan = 0;
        c.head_started = 0;
        if (!parsed) {
          RespondError(c, error.status, error.message);
          return;
        }
        AdmitRequest(c, std::move(head));
        continue;
      }
      if (c.phase == Phase::kReadingBody) {
        if (!ReadBody(c)) return;
        continue;
      }
      return;
    }
  }

  // A head over max_head_bytes: 414 if the request line alone is (the target is too
  // long), else 431.
  void RefuseOversizedHead(Connection& c) {
    const size_t line_end = c.in.find("\r\n");
    if (line_end == std::string::npos || line_end > options_.max_head_bytes) {
      RespondError(c, 414,
                   "the request target is longer than the server accepts (the request "
                   "head may hold at most " +
                       std::to_string(options_.max_head_bytes) + " bytes)");
      return;
    }
    RespondError(c, 431,
                 "the request head is larger than " +
                     std::to_string(options_.max_head_bytes) + " bytes");
  }

  void AdmitRequest(Connection& c, std::shared_ptr<RequestHead> head) {
    c.facts.head = head->request.method == "HEAD";
    c.facts.minor_version = head->minor_version;
    // RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing
    // (1.0 has no chunked coding): serve it, then close.
    c.facts.keep_alive = head->keep_alive && !(head->minor_version == 0 && head->chunked);
    if (!c.facts.keep_alive) c.close_after = true;
    Admission admission;
    try {
      admission = handler_->Admit(head->request);
    } catch (const std::exception& e) {
      admission.refusal = std::make_unique<Response>(
          handler_->ErrorResponse(500, std::string("admission failed: ") + e.what()));
    }
    if (admission.refusal) {
      // Refused from the head: the body (if any) is never read.
      if (head->has_body()) c.close_after = true;
      SendResponse(c, *admission.refusal, /*input_pending=*/head->has_body());
      return;
    }
    c.head = std::move(head);
    c.route = admission.route;
    c.max_body = admission.max_body_bytes;
    RequestHead& h = *c.head;
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
        c.decoder = std::make_unique<BodyDecoder>(std::move(decoder));
        c.phase = Phase::kAwaitingStreamSlot;
        c.last_activity = now_;
        stream_waiters_.push_back(c.id);
        UpdateInterest(c);
        return;
      }
      DispatchStreamed(c, std::move(decoder));
      return;
    }
    if (h.expect_continue) QueueContinue(c);
    c.decoder = std::make_unique<BodyDecoder>(std::move(decoder));
    c.inflater = h.gzip ? std::make_unique<GzipInflater>() : nullptr;
    c.compressed.clear();
    c.compressed_total = 0;
    c.phase = Phase::kReadingBody;
    c.last_activity = now_;
    c.body_started = now_;
    c.body_received = static_cast<int64_t>(c.in.size());  // read with the head
  }

  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

  // Tells a client that waits for it (Expect: 100-continue) to send the body. HTTP/1.0
  // has no interim responses (RFC 9110 15.2): a 1.0 client just sends.
  void QueueContinue(Connection& c) {
    if (c.facts.minor_version == 0) return;
    c.out.append(kContinue);
    Flush(c);
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
      DispatchStreamed(*c, std::move(decoder));
    }
  }

  // Decodes buffered input into the request body. Returns true when the request was
  // dispatched (or the connection answered), false when more input is needed.
  bool ReadBody(Connection& c) {
    if (c.in.empty()) return false;
    RequestHead& h = *c.head;
    std::string& body = h.request.body;
    const size_t limit = static_cast<size_t>(c.max_body);
    size_t consumed = 0;
    BodyDecoder::State state;
    if (!c.inflater) {
      // One byte more than allowed tells an oversized chunked body.
      size_t room = limit + 1 - std::min(body.size(), limit + 1);
      state = c.decoder->Decode(c.in, &body, room, &consumed);
      if (body.size() > limit) {
        RespondTooLarge(c);
        return true;
      }
    } else {
      c.compressed.clear();
      state = c.decoder->Decode(c.in, &c.compressed, c.in.size(), &consumed);
      c.compressed_total += static_cast<int64_t>(c.compressed.size());
      if (c.compressed_total > c.max_body) {
        RespondTooLarge(c);
        return true;
      }
      GzipInflater::State inflated = c.inflater->Inflate(c.compressed, &body, limit);
      if (inflated == GzipInflater::State::kTooLarge) {
        RespondTooLarge(c);
        return true;
      }
      if (inflated == GzipInflater::State::kError) {
        RespondError(c, 400, c.inflater->error());
        return true;
      }
    }
    c.in.erase(0, consumed);
    buffered_body_bytes_ += static_cast<int64_t>(body.size()) - c.budgeted;
    c.budgeted = static_cast<int64_t>(body.size());
    if (buffered_body_bytes_ > options_.max_buffered_body_bytes) {
      RespondError(c, 503,
                   "the server is buffering too many request bodies; retry the request",
                   /*input_pending=*/true);
      return true;
    }
    if (state == BodyDecoder::State::kError) {
      RespondError(c, 400, "malformed chunked body: " + c.decoder->error());
      return true;
    }
    if (state == BodyDecoder::State::kMore) return false;
    if (c.inflater && !c.inflater->finished()) {
      RespondError(c, 400, "the gzip body ends before its gzip stream does");
      return true;
    }
    c.decoder.reset();
    c.inflater.reset();
    c.compressed = std::string();
    Dispatch(c);
    return true;
  }

  // The connection's body no longer counts against max_buffered_body_bytes (it went to
  // a worker, or was dropped).
  void ReleaseBodyBudget(Connection& c) {
    buffered_body_bytes_ -= c.budgeted;
    c.budgeted = 0;
  }

  void RespondTooLarge(Connection& c) {
    ReleaseBodyBudget(c);
    c.close_after = true;
    Response response = handler_->TooLargeResponse(c.max_body);
    c.head.reset();
    c.decoder.reset();
    c.inflater.reset();
    SendResponse(c, response, /*input_pending=*/true);
  }

  // --- handing requests to workers ---

  void Dispatch(Connection& c) {
    ReleaseBodyBudget(c);
    std::shared_ptr<RequestHead> head = std::move(c.head);
    const uint64_t id = c.id;
    const int route = c.route;
    const RequestFacts facts = c.facts;
    const bool server_close = c.close_after;
    auto task = [this, id, head, route, facts, server_close] {
      Response response;
      RunHandler(head->request, response, route, nullptr);
      if (response.deferred) {
        AttachDeferred(*response.deferred, mailbox_, id, facts, server_close,
                       options_.response_buffer_bytes);
        return;
      }
      Deliver(id, facts, response, server_close, Completion{});
    };
    if (!workers_->TrySubmit(std::move(task))) {
      RespondError(c, 503, "the server is overloaded; retry the request");
      return;
    }
    c.phase = Phase::kHandling;
    ++in_flight_;
    UpdateInterest(c);
  }

  // REQUIRES: a streamed turn is free (streamed_active_ < max_streamed_).
  void DispatchStreamed(Connection& c, BodyDecoder decoder) {
    if (c.head->expect_continue && c.facts.minor_version > 0) {
      // The output buffer is empty between responses; a short write is all but
      // impossible, and then the client just sends the body after its own timeout.
      size_t sent = 0;
      (void)c.transport->Write(kContinue.data(), kContinue.size(), &sent);
    }
    std::shared_ptr<RequestHead> head = std::move(c.head);
    const uint64_t id = c.id;
    const int fd = c.fd;
    Transport* transport = c.transport.get();  // lives while lent: reaped only after
    const int route = c.route;
    const int64_t max_body = c.max_body;
    const RequestFacts facts = c.facts;
    const bool server_close = c.close_after;
    BodyPace pace{options_.body_timeout_ms, options_.body_min_rate, options_.clock_ms,
                  manual_clock_};
    auto buffered = std::make_shared<std::string>(std::move(c.in));
    c.in.clear();
    auto task = [this, id, fd, transport, head, route, max_body, pace, buffered, facts,
                 server_close,
                 decoder = std::make_shared<BodyDecoder>(std::move(decoder))] {
      SocketBodyReader reader(transport, fd, std::move(*buffered), std::move(*decoder),
                              max_body, pace);
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
      Deliver(id, facts, response, server_close || !complete, std::move(completion));
    };
    // The worker owns the socket's input until it hands it back.
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    c.registered = false;
    c.events = 0;
    c.phase = Phase::kBodyOnWorker;
    c.lent = true;
    if (!workers_->TrySubmit(std::move(task))) {
      c.lent = false;
      c.registered = true;
      c.events = EPOLLIN;
      AddToEpoll(fd, id, EPOLLIN);
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

  // On a worker: frames the response and hands it to the loop; then runs the first
  // slice of a content provider here.
  void Deliver(uint64_t id, const RequestFacts& facts, Response& response,
               bool server_close, Completion completion) {
    completion.connection = id;
    completion.response =
        PrepareResponse(facts, response, server_close, options_.response_buffer_bytes);
    std::shared_ptr<ContentPump> pump = std::move(completion.response.pump);
    mailbox_->Post(std::move(completion));
    if (pump) pump->RunSlice(submit_);
  }

  // --- mailbox ---

  void DrainMailbox() {
    std::vector<Completion> completions;
    std::vector<uint64_t> wakes;
    {
      MutexLock lock(&mailbox_->mu);
      completions.swap(mailbox_->completions);
      wakes.swap(mailbox_->wakes);
    }
    for (Completion& completion : completions) OnCompletion(std::move(completion));
    AdmitWaitingStreams();
    for (uint64_t id : wakes) {
      if (Connection* c = Find(id)) Flush(*c);
    }
  }

  void OnCompletion(Completion completion) {
    --in_flight_;
    if (completion.returns_socket) --streamed_active_;  // AdmitWaitingStreams reuses it
    auto it = connections_.find(completion.connection);
    if (it == connections_.end()) {
      if (completion.response.channel) completion.response.channel->Break();
      return;
    }
    Connection& c = *it->second;
    if (completion.returns_socket) {
      c.lent = false;
      if (c.closed) {
        closed_.push_back(c.id);  // closed while the worker read it: reap it now
      } else {
        c.in = std::move(completion.leftover_input);
        // A body the handler did not read to its end may still be arriving.
        if (completion.response.close_after) c.body_unread = true;
        c.registered = true;
        c.events = 0;
        AddToEpoll(c.fd, c.id, 0);
      }
    }
    if (c.closed) {
      if (completion.response.channel) completion.response.channel->Break();
      return;
    }
    StartResponse(c, std::move(completion.response));
  }

  // --- writing ---

  // Sends `response` as the answer to the request being read (a refusal or an error
  // the server decided without a worker). `input_pending`: what follows on the socket
  // is the unread body, never a request.
  void SendResponse(Connection& c, Response& response, bool input_pending) {
    if (input_pending) {
      c.in.clear();
      c.body_unread = true;
      c.close_after = true;
    }
    StartResponse(c, PrepareResponse(c.facts, response, c.close_after,
                                     options_.response_buffer_bytes));
  }

  void StartResponse(Connection& c, PreparedResponse response) {
    c.phase = Phase::kResponding;
    if (response.close_after || stopping_) c.close_after = true;
    c.last_activity = now_;
    c.last_write = now_;
    c.response_started = now_;
    c.response_sent = 0;
    c.rate_limited = !response.stream;
    if (c.out_pos == c.out.size()) {
      c.out = std::move(response.head);
      c.out_pos = 0;
    } else {
      c.out += response.head;
    }
    c.out += response.body;
    c.channel = std::move(response.channel);
    c.channel_complete = c.channel == nullptr;
    if (c.channel) {
      std::weak_ptr<Mailbox> mailbox = mailbox_;
      const uint64_t id = c.id;
      c.channel->Attach(response.chunked, [mailbox, id] {
        if (auto box = mailbox.lock()) box->Wake(id);
      });
    }
    if (response.pump) {
      // Prepared on the loop (a refusal with a provider): its first slice on a worker.
      std::shared_ptr<ContentPump> pump = std::move(response.pump);
      submit_([pump, submit = submit_] { pump->RunSlice(submit); });
    }
    Flush(c);
  }

  void Flush(Connection& c) {
    while (!c.closed) {
      if (c.out_pos == c.out.size()) {
        c.out.clear();
        c.out_pos = 0;
        if (c.channel && !c.channel_complete) {
          c.channel_complete = c.channel->Take(&c.out);
          if (c.out.empty() && !c.channel_complete) {
            if (c.channel->broken()) {
              // Broken by its producer (a provider that failed): the body cannot end
              // well, so the connection ends. (Not closed(): a body that finished
              // since Take is complete, and its wake is on the way.)
              Close(c);
              return;
            }
            break;  // wait for the producer
          }
          if (!c.out.empty()) continue;
        }
        if (c.phase == Phase::kResponding) ResponseDone(c);
        break;
      }
      size_t sent = 0;
      Transport::Io io =
          c.transport->Write(c.out.data() + c.out_pos, c.out.size() - c.out_pos, &sent);
      c.write_wants_read = io == Transport::Io::kWouldBlock && c.transport->wants_read();
      if (io == Transport::Io::kDone) {
        c.out_pos += sent;
        c.response_sent += static_cast<int64_t>(sent);
        c.last_activity = now_;
        c.last_write = now_;
        continue;
      }
      if (io == Transport::Io::kWouldBlock) break;
      Close(c);
      return;
    }
    UpdateInterest(c);
  }

  void ResponseDone(Connection& c) {
    if (c.channel) {
      c.channel->Break();  // over: release the producer, run its on-close
      c.channel.reset();
    }
    if (c.out.capacity() > (64 << 10)) std::string().swap(c.out);
    if (c.close_after) {
      FinishConnection(c);
      return;
    }
    c.phase = Phase::kReadingHead;
    c.last_activity = now_;
    c.idle_order = ++idle_counter_;
    c.head_started = 0;
    // Pipelined requests already received are parsed by the loop (ProcessReady), not
    // here: a client pipelining many requests answered at once must not recurse.
    ready_.push_back(c.id);
  }

  void ProcessReady() {
    while (!ready_.empty()) {
      std::vector<uint64_t> ready;
      ready.swap(ready_);
      for (uint64_t id : ready) {
        Connection* c = Find(id);
        if (!c || c->phase != Phase::kReadingHead) continue;
        ProcessInput(*c);
        if (c->closed) continue;
        if (c->peer_closed && c->phase == Phase::kReadingHead) {
          Close(*c);  // a half-closed client with nothing more to ask
          continue;
        }
        UpdateInterest(*c);
      }
    }
  }

  // Answers the request being read with an error the server decided itself, then
  // closes the connection: malformed input or a timeout leave the byte stream out of
  // step, and an overload sheds the connection (503s carry Retry-After).
  void RespondError(Connection& c, int status, const std::string& message,
                    bool input_pending = false) {
    ReleaseBodyBudget(c);
    Response response = handler_->ErrorResponse(status, message);
    if (status == 503) {
      response.set_header("Retry-After", kRetryAfterSeconds);
    } else {
      input_pending = true;
    }
    c.close_after = true;
    c.head.reset();
    c.decoder.reset();
    c.inflater.reset();
    SendResponse(c, response, input_pending);
  }

  // --- timeouts and shutdown ---

  void Sweep() {
    ResumeAccepting();
    std::vector<uint64_t> expired;
    std::vector<std::pair<uint64_t, Timeout>> timed_out;  // answered first
    for (auto& [id, c] : connections_) {
      if (c->closed) continue;
      switch (c->phase) {
        case Phase::kReadingHead:
          if (!c->transport->handshake_complete()) {
            // The handshake counts against header_timeout from the accept
            // (head_started); past it, no 408 could get through: close at once rather
            // than hold the connection for write_timeout more.
            if (now_ - c->head_started > options_.header_timeout_ms) {
              expired.push_back(id);
            }
          } else if (c->in.empty() && c->head_started == 0) {
            if (now_ - c->last_activity > options_.idle_timeout_ms) {
              expired.push_back(id);
            }
          } else if (c->head_started != 0 &&
                     now_ - c->head_started > options_.header_timeout_ms) {
            timed_out.emplace_back(id, Timeout::kHead);
          }
          break;
        case Phase::kReadingBody:
          if (now_ - c->last_activity > options_.body_timeout_ms) {
            timed_out.emplace_back(id, Timeout::kBodyStalled);
          } else if (now_ > RateDeadlineMs(c->body_started, c->body_received,
                                           options_.body_timeout_ms,
                                           options_.body_min_rate)) {
            timed_out.emplace_back(id, Timeout::kBodyTooSlow);
          }
          break;
        case Phase::kAwaitingStreamSlot:
          if (now_ - c->last_activity > options_.body_timeout_ms) {
            timed_out.emplace_back(id, Timeout::kStreamSlotWait);
          }
          break;
        case Phase::kResponding:
          // Only while the client holds bytes up: a producer still computing is not
          // the client's fault.
          if (c->out_pos < c->out.size() &&
              (now_ - c->last_write > options_.write_timeout_ms ||
               (c->rate_limited &&
                now_ > RateDeadlineMs(c->response_started, c->response_sent,
                                      options_.write_timeout_ms,
                                      options_.response_min_rate)))) {
            expired.push_back(id);
          }
          break;
        case Phase::kLingering:
          if (now_ - c->last_activity > kLingerMs) expired.push_back(id);
          break;
        case Phase::kHandling:
        case Phase::kBodyOnWorker:
          break;
      }
    }
    for (uint64_t id : expired) {
      if (Connection* c = Find(id)) Close(*c);
    }
    for (auto [id, timeout] : timed_out) {
      Connection* c = Find(id);
      if (!c) continue;
      switch (timeout) {
        case Timeout::kHead:
          RespondError(*c, 408, "the request head did not arrive in time");
          break;
        case Timeout::kBodyStalled:
          RespondError(*c, 408, "the request body stopped arriving");
          break;
        case Timeout::kBodyTooSlow:
          RespondError(*c, 408,
                       "the request body arrives too slowly (under " +
                           std::to_string(options_.body_min_rate) +
                           " bytes/s on average)");
          break;
        case Timeout::kStreamSlotWait:
          RespondError(*c, 503, "too many uploads are being received; retry the request",
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
    for (auto& [id, c] : connections_) {
      c->close_after = true;
      if (c->phase == Phase::kReadingHead || c->phase == Phase::kReadingBody ||
          c->phase == Phase::kLingering || c->phase == Phase::kAwaitingStreamSlot) {
        Close(*c);
      }
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
  ContentPump::Submit submit_;  // a pump's next slice, onto workers_
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  size_t max_connections_ = 0;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  size_t live_connections_ = 0;    // not closed
  std::vector<uint64_t> closed_;   // closed this turn: Reap frees them
  std::vector<uint64_t> ready_;    // connections that finished a response
  std::vector<uint64_t> rereads_;  // TLS input buffered past epoll's sight
  const bool tls_enabled_;         // chosen at construction; contexts may be replaced
  Mutex tls_mu_;
  std::shared_ptr<TlsContext> tls_ GUARDED_BY(tls_mu_);  // for new connections
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
    : impl_tls_enabled_(options.tls != nullptr),
      impl_(std::make_unique<Impl>(this, std::move(options), handler)) {}

HttpServer::~HttpServer() = default;

Status HttpServer::Bind() { return impl_->Bind(&bound_port_, &max_connections_); }

void HttpServer::Serve() { impl_->Serve(); }

void HttpServer::Stop() { impl_->Stop(); }

Status HttpServer::ReplaceTls(std::shared_ptr<TlsContext> tls) {
  if (!impl_tls_enabled_) {
    return FailedPrecondition("the server was started without TLS");
  }
  if (!tls) return InvalidArgument("no TLS context");
  impl_->SetTls(std::move(tls));
  return Status::OK();
}

}  // namespace sheetlog::api::http
