// Fuzzes A1 references (src/sheet/a1.h): columns, cell references and ranges. Whatever
// the input: no crash, OK or InvalidArgument with a short message; what parses is in the
// grid and formats back to text that parses to the same value (references are stored in
// the log for ever, so the round trip must be exact).
#include <gtest/gtest.h>

#include "src/sheet/a1.h"
#include "tests/support/fuzz_inputs.h"

namespace sheetlog::testing {
namespace {

constexpr size_t kMaxA1MessageBytes = 1024;

void ExpectRefusal(const Status& status, const std::string& what) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << what << status.ToString();
  EXPECT_FALSE(status.message().empty());
  EXPECT_LE(status.message().size(), kMaxA1MessageBytes) << what;
}

void CheckText(std::string_view text) {
  Result<int64_t> column = ParseColumn(text);
  if (column.ok()) {
    EXPECT_GE(*column, 1);
    EXPECT_LE(*column, kMaxColumn);
    EXPECT_EQ(FormatColumn(*column), text);
  } else {
    ExpectRefusal(column.status(), "ParseColumn: ");
  }
  Result<CellRef> ref = ParseCellRef(text);
  if (ref.ok()) {
    EXPECT_TRUE(InGrid(*ref));
    // Strict parsing: the text is the canonical form.
    EXPECT_EQ(FormatCellRef(*ref), text);
  } else {
    ExpectRefusal(ref.status(), "ParseCellRef: ");
  }
  Result<CellRange> range = ParseRange(text);
  if (range.ok()) {
    EXPECT_TRUE(InGrid(range->first));
    EXPECT_TRUE(InGrid(range->last));
    EXPECT_LE(range->first.row, range->last.row);
    EXPECT_LE(range->first.col, range->last.col);
    EXPECT_GE(range->rows(), 1);
    EXPECT_GE(range->columns(), 1);
    Result<CellRange> again = ParseRange(FormatRange(*range));
    ASSERT_TRUE(again.ok()) << FormatRange(*range) << ": " << again.status().ToString();
    EXPECT_EQ(*again, *range) << FormatRange(*range);
  } else {
    ExpectRefusal(range.status(), "ParseRange: ");
  }
}

// Each corpus file holds one reference per line; each line is an input of its own, and
// the whole file (with its line ends) is one more.
void CheckLines(const std::string& bytes) {
  CheckText(bytes);
  size_t start = 0;
  while (start <= bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    ASSERT_NO_FATAL_FAILURE(
        CheckText(std::string_view(bytes).substr(start, end - start)));
    start = end + 1;
  }
}

TEST(A1FuzzTest, CorpusAndMutants) {
  FuzzDictionary dictionary;
  dictionary.tokens = {"A",
                       "Z",
                       "XFD",
                       "FXSHRXW",
                       "FXSHRXX",
                       "1",
                       "0",
                       "2147483647",
                       "2147483648",
                       ":",
                       "$",
                       " ",
                       "a",
                       "1048576",
                       "99999999999999999999",
                       "-",
                       "AAAAAAAAAAAAAAAA"};
  dictionary.nest_open = "A";
  dictionary.nest_close = "1";
  const int64_t ran =
      FuzzCorpus("a1", FuzzMutations(1500), 0xA1A1, dictionary, CheckLines);
  EXPECT_GT(ran, 1500);
}

}  // namespace
}  // namespace sheetlog::testing
