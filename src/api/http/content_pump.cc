#include "src/api/http/content_pump.h"

#include <exception>

#include "src/api/http/response_channel.h"

namespace sheetlog::api::http {
namespace {

// The provider's sink: appends to the channel without blocking, counting what it took.
class ChannelSink : public DataSink {
 public:
  ChannelSink(ResponseChannel* channel, size_t* written, bool* done)
      : channel_(channel), written_(written), done_(done) {}
  bool write(const char* data, size_t size) override {
    if (!channel_->Append(std::string_view(data, size))) return false;
    *written_ += size;
    return true;
  }
  void done() override { *done_ = true; }

 private:
  ResponseChannel* channel_;
  size_t* written_;
  bool* done_;
};

}  // namespace

ContentPump::ContentPump(Response& response, std::shared_ptr<ResponseChannel> channel)
    : sized_(response.body_kind == Response::BodyKind::kSized),
      length_(response.content_length),
      sized_provider_(std::move(response.sized_provider)),
      chunked_provider_(std::move(response.chunked_provider)),
      channel_(std::move(channel)) {}

bool ContentPump::ProduceOnce() {
  ChannelSink sink(channel_.get(), &written_, &done_);
  try {
    if (sized_) {
      const size_t before = written_;
      if (!sized_provider_(before, length_ - before, sink)) return false;
      // No progress would loop for ever; more than promised breaks the framing.
      return written_ > before && written_ <= length_;
    }
    return chunked_provider_(written_, sink);
  } catch (const std::exception&) {
    return false;
  }
}

void ContentPump::RunSlice(const Submit& submit) {
  while (true) {
    if (sized_ ? written_ >= length_ : done_) {
      channel_->Finish();
      return;
    }
    if (channel_->broken()) return;  // the connection is gone
    if (!ProduceOnce()) {
      // The body cannot be completed: the loop closes the connection (the client sees
      // a truncated response, never a wrong one).
      channel_->Break();
      return;
    }
    if (sized_ ? written_ >= length_ : done_) continue;
    std::shared_ptr<ContentPump> self = shared_from_this();
    if (channel_->ParkUntilRoom(
            [self, submit] { submit([self, submit] { self->RunSlice(submit); }); })) {
      return;
    }
  }
}

}  // namespace sheetlog::api::http
