#include "src/cli/cli.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "emulator/json_text.h"

namespace sheetlog::cli {

Flags::Flags(int argc, char** argv, int first, const std::vector<std::string>& booleans) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::string value;
    const size_t eq = name.find('=');
    bool is_bool = false;
    for (const auto& b : booleans) is_bool |= (b == name);
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (is_bool) {
      value = "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      error_ = "flag --" + name + " needs a value";
      return;
    }
    values_[name] = value;
  }
}

std::string Flags::Get(const std::string& name, const std::string& fallback) {
  return Find(name).value_or(fallback);
}

std::optional<std::string> Flags::Find(const std::string& name) {
  used_.push_back(name);
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Flags::Unused() const {
  for (const auto& [name, value] : values_) {
    bool used = false;
    for (const auto& u : used_) used |= (u == name);
    if (!used) return name;
  }
  return "";
}

bool WantsHelp(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return true;
  }
  return false;
}

std::string CommandHelp(const Command& command) {
  return std::string(command.help) +
         "  --server URL       the server (default $SHEETLOG_URL, else "
         "http://127.0.0.1:8787)\n"
         "  --token TOKEN      its token (default $SHEETLOG_TOKEN)\n"
         "  -h, --help         this text\n";
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "sheetlog: %s\n", message.c_str());
  return 2;
}

Client::Client(Flags& flags) {
  const char* env_url = std::getenv("SHEETLOG_URL");
  const char* env_token = std::getenv("SHEETLOG_TOKEN");
  base_url_ = flags.Get("server", env_url != nullptr ? env_url : "http://127.0.0.1:8787");
  const std::string token = flags.Get("token", env_token != nullptr ? env_token : "");
  http_ = std::make_unique<httplib::Client>(base_url_);
  http_->set_keep_alive(true);
  http_->set_read_timeout(600, 0);
  if (!token.empty()) http_->set_bearer_token_auth(token);
}

Client::Response Client::Finish(const httplib::Result& result) {
  Response out;
  if (!result) {
    out.error = "cannot reach the server at " + base_url_ + " (" +
                httplib::to_string(result.error()) + ")";
    return out;
  }
  out.status = result->status;
  out.raw = result->body;
  out.body = ParseJsonOrDiscarded(result->body);
  if (out.body.is_discarded()) out.body = nullptr;
  if (out.status >= 400) {
    out.error = "HTTP " + std::to_string(out.status);
    if (out.body.is_object() && out.body.contains("error")) {
      out.error += " " + out.body["error"].value("code", std::string()) + ": " +
                   out.body["error"].value("message", std::string());
    }
  }
  return out;
}

Client::Response Client::Get(const std::string& path) { return Finish(http_->Get(path)); }

Client::Response Client::Post(const std::string& path, const nlohmann::json& body) {
  return Finish(http_->Post(path, body.dump(), "application/json"));
}

Client::Response Client::Send(const std::string& method, const std::string& path,
                              const std::string& body, const std::string& content_type) {
  if (method == "GET") return Finish(http_->Get(path));
  if (method == "DELETE") return Finish(http_->Delete(path));
  if (method == "PUT") return Finish(http_->Put(path, body, content_type));
  return Finish(http_->Post(path, body, content_type));
}

namespace {

int64_t NowMicros() {
  // Real time on purpose: a progress display paces itself by the wall clock.
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDERR_FILENO) != 0) {}

Progress::~Progress() {
  if (enabled_ && last_draw_micros_ != 0) std::fputc('\n', stderr);
}

void Progress::Update(int64_t done) {
  if (!enabled_) return;
  const int64_t now = NowMicros();
  if (last_draw_micros_ != 0 && now - last_draw_micros_ < 100000 && done != total_)
    return;
  last_draw_micros_ = now;
  if (total_ > 0) {
    std::fprintf(stderr, "\r%s %3d%% (%lld/%lld)", label_.c_str(),
                 static_cast<int>(100 * done / total_), static_cast<long long>(done),
                 static_cast<long long>(total_));
  } else {
    std::fprintf(stderr, "\r%s %lld", label_.c_str(), static_cast<long long>(done));
  }
  std::fflush(stderr);
}

}  // namespace sheetlog::cli
