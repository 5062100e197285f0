#include "emulator/blob/blob_store.h"

#include <cstdint>

namespace sheetlog {

namespace {

constexpr size_t kMaxTags = 10;
constexpr size_t kMaxTagKeyBytes = 128;
constexpr size_t kMaxTagValueBytes = 256;
constexpr size_t kMaxContentTypeBytes = 255;
constexpr int kMaxListLimit = 1000;

// Continuation tokens: base64url (no padding) of 'k' + last key or 'p' + last common
// prefix. Opaque to callers; decoding rejects anything else.
constexpr char kB64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string Base64UrlEncode(std::string_view in) {
  std::string out;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {kB64[v >> 18], kB64[(v >> 12) & 63], kB64[(v >> 6) & 63], kB64[v & 63]};
  }
  if (in.size() - i == 1) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += {kB64[v >> 18], kB64[(v >> 12) & 63]};
  } else if (in.size() - i == 2) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {kB64[v >> 18], kB64[(v >> 12) & 63], kB64[(v >> 6) & 63]};
  }
  return out;
}

std::optional<std::string> Base64UrlDecode(std::string_view in) {
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const char* p = std::char_traits<char>::find(kB64, 64, c);
    if (p == nullptr) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  // Leftover bits must be zero, so every string has one encoding.
  if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

}  // namespace

Status BlobStore::ValidateKey(std::string_view key) { return ValidateBlobKey(key); }

Status ValidateBlobCopyOptions(const BlobPutOptions& options) {
  if (HasBlobPutConditions(options)) {
    return InvalidArgument("a blob copy takes no conditions on its destination");
  }
  return ValidateBlobPutOptions(options);
}

bool HasBlobPutConditions(const BlobPutOptions& options) {
  return options.if_none_match || options.if_match.has_value();
}

Status CheckBlobPutConditions(const std::string& key, const BlobPutOptions& options,
                              const std::optional<std::string>& current_etag) {
  if (options.if_none_match && current_etag) {
    return ConditionFailed("put on " + key + ": an object exists (If-None-Match: *)");
  }
  if (options.if_match && current_etag != options.if_match) {
    return ConditionFailed("put on " + key + ": the object's etag is not " +
                           *options.if_match + " (If-Match)");
  }
  return Status::OK();
}

bool LifecycleRule::Selects(const BlobTags& tags) const {
  auto tag = tags.find(tag_key);
  return tag != tags.end() && tag->second == tag_value;
}

bool SweepShouldDelete(const LifecycleRule& rule, const BlobTags& tags,
                       int64_t created_micros, int64_t now_micros, const std::string& key,
                       const BlobKeepPredicate& keep, SweepReport* report) {
  if (!rule.Selects(tags)) return false;
  ++report->matched;
  if (!rule.Expired(created_micros, now_micros)) {
    ++report->too_young;
    return false;
  }
  // The predicate may be slow (it asks the event log); no lock is held while it runs.
  if (keep && keep(key)) {
    ++report->kept_by_predicate;
    return false;
  }
  return true;
}

Status ValidateBlobPutOptions(const BlobPutOptions& options) {
  if (options.content_type.size() > kMaxContentTypeBytes ||
      !IsPrintableUtf8(options.content_type, /*allow_backslash=*/true)) {
    return InvalidArgument("content type " + QuoteForMessage(options.content_type) +
                           " must be at most 255 bytes of printable characters");
  }
  if (options.tags.size() > kMaxTags) {
    return InvalidArgument("an object has at most " + std::to_string(kMaxTags) +
                           " tags, got " + std::to_string(options.tags.size()));
  }
  for (const auto& [tag, value] : options.tags) {
    if (tag.empty() || tag.size() > kMaxTagKeyBytes ||
        !IsPrintableUtf8(tag, /*allow_backslash=*/true)) {
      return InvalidArgument("tag key " + QuoteForMessage(tag) +
                             " must be 1..128 bytes of printable characters");
    }
    if (value.size() > kMaxTagValueBytes ||
        !IsPrintableUtf8(value, /*allow_backslash=*/true)) {
      return InvalidArgument("value of tag " + QuoteForMessage(tag) +
                             " must be 0..256 bytes of printable characters");
    }
  }
  return Status::OK();
}

Status ValidateBlobListOptions(const BlobListOptions& options) {
  if (options.limit < 1 || options.limit > kMaxListLimit) {
    return InvalidArgument("list limit must be 1.." + std::to_string(kMaxListLimit) +
                           ", got " + std::to_string(options.limit));
  }
  if (!options.delimiter.empty() && options.delimiter != "/") {
    return InvalidArgument("only the delimiter \"/\" is supported, got " +
                           QuoteForMessage(options.delimiter));
  }
  return Status::OK();
}

// A token: kind ('k' key, 'p' common prefix), the delimiter it was issued with ('/' or
// '-' for none), the listing's prefix, NUL, then the last item returned. Bound to its
// listing: a token used with another prefix or delimiter would silently skip or repeat
// items, so it is refused.
std::string EncodeBlobContinuation(const BlobListOptions& options,
                                   std::string_view last) {
  const bool is_prefix =
      !options.delimiter.empty() && !last.empty() && last.back() == '/';
  return Base64UrlEncode(std::string(is_prefix ? "p" : "k") +
                         (options.delimiter.empty() ? "-" : "/") + options.prefix + '\0' +
                         std::string(last));
}

Result<std::string> DecodeBlobContinuation(const BlobListOptions& options) {
  std::optional<std::string> decoded = Base64UrlDecode(options.continuation);
  const size_t nul = decoded ? decoded->find('\0') : std::string::npos;
  if (!decoded || nul == std::string::npos || nul < 2 || nul + 1 >= decoded->size() ||
      ((*decoded)[0] != 'k' && (*decoded)[0] != 'p') ||
      ((*decoded)[1] != '/' && (*decoded)[1] != '-')) {
    return InvalidArgument("malformed continuation token");
  }
  const std::string token_prefix = decoded->substr(2, nul - 2);
  const std::string token_delimiter = (*decoded)[1] == '/' ? "/" : "";
  if (token_prefix != options.prefix || token_delimiter != options.delimiter) {
    return InvalidArgument("continuation token belongs to another listing (prefix " +
                           QuoteForMessage(token_prefix) + ", delimiter " +
                           QuoteForMessage(token_delimiter) +
                           "); start again without it");
  }
  std::string after = decoded->substr(nul + 1);
  // 'p' items end in the delimiter and keys never do: a token saying otherwise is forged.
  if (((*decoded)[0] == 'p') != (!token_delimiter.empty() && after.back() == '/')) {
    return InvalidArgument("malformed continuation token");
  }
  return after;
}

}  // namespace sheetlog
