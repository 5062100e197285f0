#include "src/api/http/socket_body_reader.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

namespace sheetlog::api::http {
namespace {
constexpr size_t kReadChunk = 64 << 10;
constexpr int64_t kPollSliceMs = 50;
}  // namespace

int64_t RateDeadlineMs(int64_t started_ms, int64_t transferred, int64_t timeout_ms,
                       int64_t min_rate) {
  if (min_rate <= 0) return INT64_MAX;
  return started_ms + timeout_ms + transferred * 1000 / min_rate;
}

SocketBodyReader::SocketBodyReader(Transport* transport, int fd, std::string buffered,
                                   BodyDecoder decoder, int64_t max_bytes, BodyPace pace)
    : transport_(transport),
      fd_(fd),
      buffer_(std::move(buffered)),
      decoder_(std::move(decoder)),
      max_bytes_(max_bytes),
      pace_(std::move(pace)),
      started_ms_(pace_.clock()),
      last_progress_ms_(started_ms_),
      received_(static_cast<int64_t>(buffer_.size())) {}

bool SocketBodyReader::Read(const ContentReceiver& receiver) {
  std::string piece;
  while (true) {
    if (!buffer_.empty() || decoder_.done()) {
      piece.clear();
      size_t consumed = 0;
      BodyDecoder::State state = decoder_.Decode(buffer_, &piece, kReadChunk, &consumed);
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
    // Whatever has arrived first (TLS may hold decrypted bytes the socket no longer
    // shows), then wait for the socket.
    char chunk[kReadChunk];
    size_t got = 0;
    Transport::Io io = transport_->Read(chunk, sizeof(chunk), &got);
    if (io == Transport::Io::kEof || io == Transport::Io::kError) {
      return false;  // the client stopped sending, or the server closed
    }
    if (io == Transport::Io::kWouldBlock) {
      const int64_t now = pace_.clock();
      const int64_t deadline = std::min(
          last_progress_ms_ + pace_.timeout_ms,
          RateDeadlineMs(started_ms_, received_, pace_.timeout_ms, pace_.min_rate));
      if (now >= deadline) return false;  // stalled, or arriving too slowly
      int64_t wait = deadline - now;
      if (pace_.poll_in_slices) wait = std::min(wait, kPollSliceMs);
      pollfd p{fd_, static_cast<short>(transport_->wants_write() ? POLLOUT : POLLIN), 0};
      int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(wait, 1 << 30)));
      if (ready < 0 && errno != EINTR) return false;
      continue;  // read again, or see the clock
    }
    const ssize_t n = static_cast<ssize_t>(got);
    buffer_.append(chunk, static_cast<size_t>(n));
    received_ += n;
    last_progress_ms_ = pace_.clock();
  }
}

}  // namespace sheetlog::api::http
