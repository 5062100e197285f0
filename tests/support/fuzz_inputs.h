// Deterministic fuzzing inside the ordinary test suite (tests/fuzz/): every file of a
// checked-in corpus (tests/fuzz/corpus/<target>/) and a fixed number of seeded
// mutations of each one go through a parser, and the test asserts what must hold for
// any input: no crash or sanitizer report, the documented error kind, bounded output.
//
// Mutations: bit flips, interesting bytes, deletions, insertions, truncation, repeated
// slices, splices with another corpus input, dictionary tokens, deep nesting, invalid
// UTF-8 and huge numbers; some stacked. The same seed gives the same inputs on every
// machine: the mutator draws only from std::mt19937_64's raw output, which the standard
// specifies (the distributions' algorithms it does not).
//
// SHEETLOG_FUZZ_MUTATIONS=<n> overrides every target's mutation count (longer local
// runs); SHEETLOG_FUZZ_SEED=<n> replaces the seed. A failing input is written to
// /tmp/sheetlog-fuzz-<target>-failure.bin and named in the failure message.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace sheetlog::testing {

struct FuzzInput {
  std::string name;  // the corpus file, and the mutations applied
  std::string bytes;
};

// Tokens a mutator splices in for one input language.
struct FuzzDictionary {
  std::vector<std::string> tokens;  // e.g. "{", "\"value\":", "null", "<c r=\"A1\">"
  // Nesting: an opener repeated many times, with its closer repeated after.
  std::string nest_open = "[";
  std::string nest_close = "]";
};

// Every file of tests/fuzz/corpus/<target>/, sorted by name (empty if the directory is
// missing: the caller asserts on it).
std::vector<FuzzInput> LoadFuzzCorpus(const std::string& target);

class FuzzMutator {
 public:
  FuzzMutator(uint64_t seed, FuzzDictionary dictionary);

  // A mutant of `input`; `other` is a second corpus input for splices. Appends what was
  // done to *how (", flip 12.3, truncate 40").
  std::string Mutate(const std::string& input, const std::string& other,
                     std::string* how);

  // A number in [0, n).
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : engine_() % n; }

 private:
  std::string MutateOnce(const std::string& input, const std::string& other,
                         std::string* how);

  std::mt19937_64 engine_;
  FuzzDictionary dictionary_;
};

// Runs `check` on every corpus input of `target` and on `mutations` mutants of each.
// `check` asserts with EXPECT/ASSERT; the run stops at the first input that fails, and
// the failure names the input (and writes it to /tmp, see above). Fails if the corpus
// is empty. Returns how many inputs ran.
int64_t FuzzCorpus(const std::string& target, int mutations, uint64_t seed,
                   const FuzzDictionary& dictionary,
                   const std::function<void(const std::string& bytes)>& check);

// A mutation count, or SHEETLOG_FUZZ_MUTATIONS when set.
int FuzzMutations(int default_count);

// Some bytes in hex for failure messages (the first 256).
std::string FuzzHex(const std::string& bytes);

}  // namespace sheetlog::testing
