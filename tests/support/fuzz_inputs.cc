#include "tests/support/fuzz_inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sheetlog::testing {

namespace {

// Bytes that break parsers: NUL, sign bits, quotes, separators, line ends, brackets.
constexpr unsigned char kInterestingBytes[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '"', '\'',
                                               ',',  '\r', '\n', '{',  '}',  '[', ']',
                                               '<',  '>',  '&',  '\\', ':',  '='};

// Byte sequences that are not UTF-8: a lone continuation byte, an overlong NUL, a
// surrogate, a code point past U+10FFFF, a truncated sequence, bytes never valid.
const char* const kInvalidUtf8[] = {
    "\x80",     "\xc0\x80", "\xed\xa0\x80",        "\xf4\x90\x80\x80",
    "\xe2\x82", "\xff\xfe", "\xf8\x88\x80\x80\x80"};

const char* const kHugeNumbers[] = {"1e400",
                                    "-1e400",
                                    "1e-400",
                                    "18446744073709551616",
                                    "-9223372036854775809",
                                    "9007199254740993",
                                    "2147483648",
                                    "4294967296",
                                    "0.0000000000000000000000000000000000000000000000001",
                                    "1234567890123456789012345678901234567890123456789012"
                                    "34567890123456789012345678901234567890"
                                    "1234567890123456789012345678901234567890123456789012"
                                    "34567890123456789012345678901234567890"
                                    "1234567890123456789012345678901234567890123456789012"
                                    "34567890123456789012345678901234567890"
                                    "1234567890123456789012345678901234567890123456789012"
                                    "34567890123456789012345678901234567890",
                                    "1e99999999999999999999",
                                    "-0",
                                    "NaN",
                                    "Infinity"};

std::string ReadWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

std::vector<FuzzInput> LoadFuzzCorpus(const std::string& target) {
  const std::filesystem::path dir =
      std::filesystem::path(SHEETLOG_SOURCE_DIR) / "tests/fuzz/corpus" / target;
  std::vector<FuzzInput> out;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (!entry.is_regular_file()) continue;
    out.push_back({entry.path().filename().string(), ReadWholeFile(entry.path())});
  }
  std::sort(out.begin(), out.end(),
            [](const FuzzInput& a, const FuzzInput& b) { return a.name < b.name; });
  return out;
}

FuzzMutator::FuzzMutator(uint64_t seed, FuzzDictionary dictionary)
    : engine_(seed), dictionary_(std::move(dictionary)) {}

std::string FuzzMutator::Mutate(const std::string& input, const std::string& other,
                                std::string* how) {
  // One mutation in most cases, up to four stacked in the others.
  const uint64_t rounds = Below(4) == 0 ? 2 + Below(3) : 1;
  std::string out = input;
  for (uint64_t i = 0; i < rounds; ++i) out = MutateOnce(out, other, how);
  return out;
}

std::string FuzzMutator::MutateOnce(const std::string& input, const std::string& other,
                                    std::string* how) {
  std::string out = input;
  const size_t size = out.size();
  const size_t at = static_cast<size_t>(Below(size + 1));  // a position, or the end
  auto token = [&]() -> const std::string& {
    static const std::string kEmpty;
    return dictionary_.tokens.empty()
               ? kEmpty
               : dictionary_.tokens[Below(dictionary_.tokens.size())];
  };
  switch (Below(12)) {
    case 0:  // flip one bit
      if (size == 0) return out;
      {
        const size_t byte = static_cast<size_t>(Below(size));
        const int bit = static_cast<int>(Below(8));
        out[byte] = static_cast<char>(out[byte] ^ (1 << bit));
        *how += ", flip " + std::to_string(byte) + "." + std::to_string(bit);
      }
      return out;
    case 1:  // an interesting byte in place of one
      if (size == 0) return out;
      {
        const size_t byte = static_cast<size_t>(Below(size));
        out[byte] =
            static_cast<char>(kInterestingBytes[Below(sizeof(kInterestingBytes))]);
        *how += ", byte " + std::to_string(byte);
      }
      return out;
    case 2: {  // delete a range
      const size_t length =
          static_cast<size_t>(Below(std::min<size_t>(size - at, 64) + 1));
      out.erase(at, length);
      *how += ", delete " + std::to_string(at) + "+" + std::to_string(length);
      return out;
    }
    case 3: {  // insert random bytes
      std::string noise(static_cast<size_t>(1 + Below(16)), '\0');
      for (char& c : noise) c = static_cast<char>(Below(256));
      out.insert(at, noise);
      *how += ", noise " + std::to_string(at);
      return out;
    }
    case 4:  // truncate
      out.resize(at);
      *how += ", truncate " + std::to_string(at);
      return out;
    case 5: {  // repeat a slice many times
      if (size == 0) return out;
      const size_t from = static_cast<size_t>(Below(size));
      const size_t length =
          static_cast<size_t>(1 + Below(std::min<size_t>(size - from, 32)));
      const size_t times = static_cast<size_t>(2 + Below(Below(2) == 0 ? 8 : 2000));
      std::string slice = out.substr(from, length);
      std::string repeated;
      for (size_t i = 0; i < times; ++i) repeated += slice;
      out.insert(from, repeated);
      *how += ", repeat " + std::to_string(from) + "+" + std::to_string(length) + "x" +
              std::to_string(times);
      return out;
    }
    case 6: {  // splice: this input's head, the other's tail
      const size_t other_at = static_cast<size_t>(Below(other.size() + 1));
      out = out.substr(0, at) + other.substr(other_at);
      *how += ", splice " + std::to_string(at) + "/" + std::to_string(other_at);
      return out;
    }
    case 7:
    case 8:  // a dictionary token
      out.insert(at, token());
      *how += ", token " + std::to_string(at);
      return out;
    case 9: {  // deep nesting
      static constexpr size_t kDepths[] = {64, 1000, 20000, 100000};
      const size_t depth = kDepths[Below(4)];
      std::string open;
      std::string close;
      open.reserve(depth * dictionary_.nest_open.size());
      for (size_t i = 0; i < depth; ++i) open += dictionary_.nest_open;
      for (size_t i = 0; i < depth; ++i) close += dictionary_.nest_close;
      // Balanced around the rest of the input half of the time, unclosed otherwise.
      if (Below(2) == 0) {
        out = out.substr(0, at) + open + out.substr(at) + close;
      } else {
        out.insert(at, open);
      }
      *how += ", nest " + std::to_string(depth) + " at " + std::to_string(at);
      return out;
    }
    case 10:  // invalid UTF-8
      out.insert(at, kInvalidUtf8[Below(std::size(kInvalidUtf8))]);
      *how += ", bad utf-8 " + std::to_string(at);
      return out;
    default: {  // a huge number, in place of a run of digits when there is one
      const std::string number = kHugeNumbers[Below(std::size(kHugeNumbers))];
      const size_t digit = out.find_first_of("0123456789", at);
      if (digit == std::string::npos) {
        out.insert(at, number);
      } else {
        const size_t end = out.find_first_not_of("0123456789.eE+-", digit);
        out.replace(digit, (end == std::string::npos ? out.size() : end) - digit, number);
      }
      *how += ", number " + std::to_string(at);
      return out;
    }
  }
}

int FuzzMutations(int default_count) {
  if (const char* text = std::getenv("SHEETLOG_FUZZ_MUTATIONS")) {
    return static_cast<int>(std::strtol(text, nullptr, 10));
  }
  return default_count;
}

std::string FuzzHex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < 256; ++i) {
    const auto byte = static_cast<unsigned char>(bytes[i]);
    out += kDigits[byte >> 4];
    out += kDigits[byte & 15];
  }
  if (bytes.size() > 256) out += "... (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

int64_t FuzzCorpus(const std::string& target, int mutations, uint64_t seed,
                   const FuzzDictionary& dictionary,
                   const std::function<void(const std::string& bytes)>& check) {
  if (const char* text = std::getenv("SHEETLOG_FUZZ_SEED")) {
    seed = std::strtoull(text, nullptr, 10);
  }
  const std::vector<FuzzInput> corpus = LoadFuzzCorpus(target);
  EXPECT_FALSE(corpus.empty()) << "no corpus in tests/fuzz/corpus/" << target;
  FuzzMutator mutator(seed, dictionary);
  int64_t ran = 0;
  auto run = [&](const std::string& name, const std::string& bytes) {
    {
      SCOPED_TRACE("fuzz input " + target + "/" + name + " (" +
                   std::to_string(bytes.size()) + " bytes): " + FuzzHex(bytes));
      check(bytes);
    }
    ++ran;
    if (!::testing::Test::HasFailure()) return true;
    const std::string path = "/tmp/sheetlog-fuzz-" + target + "-failure.bin";
    std::ofstream(path, std::ios::binary) << bytes;
    ADD_FAILURE() << "the failing input is in " << path << " (seed " << seed << ")";
    return false;
  };
  for (const FuzzInput& input : corpus) {
    if (!run(input.name, input.bytes)) return ran;
  }
  for (size_t i = 0; i < corpus.size(); ++i) {
    for (int m = 0; m < mutations; ++m) {
      std::string how = corpus[i].name;
      const std::string& other = corpus[mutator.Below(corpus.size())].bytes;
      const std::string mutant = mutator.Mutate(corpus[i].bytes, other, &how);
      if (!run(how + " (mutant " + std::to_string(m) + ")", mutant)) return ran;
    }
  }
  return ran;
}

}  // namespace sheetlog::testing
