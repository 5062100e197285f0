// RoutePattern (src/api/route_pattern.h): the path patterns routes are registered with.
// Its contract is "what std::regex_match would give, for the four captures it knows";
// each capture kind is specified on its own, then captures side by side.
#include "src/api/route_pattern.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace sheetlog::api {
namespace {

using Captures = std::vector<std::string>;

// The captures of a match (the whole path first), or {"<no match>"}.
Captures MatchOf(const std::string& pattern, const std::string& path) {
  Captures captures;
  if (!RoutePattern(pattern).Match(path, &captures)) return {"<no match>"};
  return captures;
}

const Captures kNoMatch = {"<no match>"};

TEST(RoutePatternTest, LiteralTextMatchesOnlyTheWholePathExactly) {
  EXPECT_EQ(MatchOf("/v1/sheets", "/v1/sheets"), (Captures{"/v1/sheets"}));
  EXPECT_EQ(MatchOf("/v1/sheets", "/v1/sheets/"), kNoMatch);
  EXPECT_EQ(MatchOf("/v1/sheets", "/v1/sheet"), kNoMatch);
  EXPECT_EQ(MatchOf("/v1/sheets", "/v1/sheetsx"), kNoMatch);
  EXPECT_EQ(MatchOf("/v1/sheets", "x/v1/sheets"), kNoMatch);
  EXPECT_EQ(MatchOf("/v1/sheets", "/V1/SHEETS"), kNoMatch) << "case matters";
  EXPECT_EQ(MatchOf("/metrics", ""), kNoMatch);
  // Characters without a regular-expression meaning are literal, '-' and '_' too.
  EXPECT_EQ(MatchOf("/v1/admin/pending-snapshots_x", "/v1/admin/pending-snapshots_x"),
            (Captures{"/v1/admin/pending-snapshots_x"}));
}

TEST(RoutePatternTest, ASegmentCaptureTakesOneNonEmptySegment) {
  const std::string sheet = R"(/v1/sheets/([^/]+))";
  EXPECT_EQ(MatchOf(sheet, "/v1/sheets/abc"), (Captures{"/v1/sheets/abc", "abc"}));
  EXPECT_EQ(MatchOf(sheet, "/v1/sheets/a.b%20c"),
            (Captures{"/v1/sheets/a.b%20c", "a.b%20c"}));
  EXPECT_EQ(MatchOf(sheet, "/v1/sheets/"), kNoMatch) << "empty";
  EXPECT_EQ(MatchOf(sheet, "/v1/sheets/a/b"), kNoMatch) << "two segments";
  EXPECT_EQ(MatchOf(sheet, "/v1/sheets/abc/"), kNoMatch) << "a trailing slash";
  const std::string entries = R"(/v1/sheets/([^/]+)/entries)";
  EXPECT_EQ(MatchOf(entries, "/v1/sheets/s1/entries"),
            (Captures{"/v1/sheets/s1/entries", "s1"}));
  EXPECT_EQ(MatchOf(entries, "/v1/sheets//entries"), kNoMatch);
}

TEST(RoutePatternTest, ADigitsCaptureTakesOneOrMoreDecimalDigits) {
  const std::string entry = R"(/v1/sheets/([^/]+)/entries/(\d+))";
  EXPECT_EQ(MatchOf(entry, "/v1/sheets/abc/entries/42"),
            (Captures{"/v1/sheets/abc/entries/42", "abc", "42"}));
  EXPECT_EQ(MatchOf(entry, "/v1/sheets/abc/entries/007"),
            (Captures{"/v1/sheets/abc/entries/007", "abc", "007"}));
  for (const char* bad : {"/v1/sheets/abc/entries/", "/v1/sheets/abc/entries/4x",
                          "/v1/sheets/abc/entries/-4", "/v1/sheets/abc/entries/+4",
                          "/v1/sheets/abc/entries/4 ", "/v1/sheets/abc/entries/4/"}) {
    EXPECT_EQ(MatchOf(entry, bad), kNoMatch) << bad;
  }
  // Digits give back what a literal after them needs (backtracking).
  EXPECT_EQ(MatchOf(R"(/n/(\d+)5)", "/n/1235"), (Captures{"/n/1235", "123"}));
  EXPECT_EQ(MatchOf(R"(/n/(\d+)5)", "/n/5"), kNoMatch) << "one digit at least";
}

TEST(RoutePatternTest, ARestCaptureTakesOneByteOrMoreSlashesIncluded) {
  const std::string blob = R"(/v1/blobs/(.+))";
  EXPECT_EQ(MatchOf(blob, "/v1/blobs/a/b/c"), (Captures{"/v1/blobs/a/b/c", "a/b/c"}));
  EXPECT_EQ(MatchOf(blob, "/v1/blobs/x"), (Captures{"/v1/blobs/x", "x"}));
  EXPECT_EQ(MatchOf(blob, "/v1/blobs//"), (Captures{"/v1/blobs//", "/"}));
  EXPECT_EQ(MatchOf(blob, "/v1/blobs/"), kNoMatch) << "empty";
  EXPECT_EQ(MatchOf(blob, "/v1/blobs"), kNoMatch);
  // The longest run that lets the rest match: the last "/tags".
  EXPECT_EQ(MatchOf(R"(/b/(.+)/tags)", "/b/x/tags/y/tags"),
            (Captures{"/b/x/tags/y/tags", "x/tags/y"}));
  EXPECT_EQ(MatchOf(R"(/b/(.+)/tags)", "/b//tags"), kNoMatch)
      << "the capture may not be empty";
}

TEST(RoutePatternTest, AnOptionalRestCaptureMayBeEmpty) {
  const std::string console = R"(/console/(.*))";
  EXPECT_EQ(MatchOf(console, "/console/"), (Captures{"/console/", ""}));
  EXPECT_EQ(MatchOf(console, "/console/sheets/s1"),
            (Captures{"/console/sheets/s1", "sheets/s1"}));
  EXPECT_EQ(MatchOf(console, "/console"), kNoMatch);
  EXPECT_EQ(MatchOf(R"(/a/(.*)/z)", "/a//z"), (Captures{"/a//z", ""}));
}

TEST(RoutePatternTest, ACapturesVectorIsReplacedAndEmptiedWhenNothingMatches) {
  const RoutePattern pattern(R"(/v1/sheets/([^/]+))");
  Captures captures = {"left", "over"};
  ASSERT_TRUE(pattern.Match("/v1/sheets/s", &captures));
  EXPECT_EQ(captures, (Captures{"/v1/sheets/s", "s"}));
  EXPECT_FALSE(pattern.Match("/v1/blobs/s", &captures));
  EXPECT_TRUE(captures.empty());
  // A failed backtracking attempt leaves nothing behind in a later match.
  const RoutePattern two(R"(/(.+)/(\d+))");
  ASSERT_TRUE(two.Match("/a/1/b/22", &captures));
  EXPECT_EQ(captures, (Captures{"/a/1/b/22", "a/1/b", "22"}));
}

TEST(RoutePatternTest, OtherRegularExpressionSyntaxIsAProgrammingErrorAtStartUp) {
  for (const char* pattern :
       {"/a(b|c)", "/a.b", "/a*", "/a+", "/a?", "/a[0-9]", "/a{2}", "^/a", "/a$",
        R"(/a\d)", "/a|/b", R"(/([^/]*))", "/(.?)", "/(x)", "/(", "/)"}) {
    try {
      RoutePattern unsupported(pattern);
      ADD_FAILURE() << "accepted " << pattern;
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + pattern + "'"),
                std::string::npos)
          << "the message names the pattern: " << e.what();
    }
  }
}

// The contract itself: where captures meet, each takes as much as it can while the
// rest still matches (leftmost first), and the verdict and captures are those of
// std::regex_match (ECMAScript). The expectations below are what std::regex_match
// gives; std::regex itself is not compiled here (GCC 12 warns inside it under
// -Werror=maybe-uninitialized).
TEST(RoutePatternTest, AdjacentCapturesSplitAsRegexMatchDoes) {
  struct Case {
    std::string pattern;
    std::string path;
    Captures want;
  };
  const std::vector<Case> cases = {
      {R"(/x/(.+)/(\d+))", "/x/a/1/b/2", {"/x/a/1/b/2", "a/1/b", "2"}},
      {R"(/x/(.+)/(\d+))", "/x//3", kNoMatch},
      {R"(/x/(.+)/(\d+))", "/x/12/", kNoMatch},
      {R"(/x/(.*)(.+))", "/x/ab12", {"/x/ab12", "ab1", "2"}},
      {R"(/x/(.*)(.+))", "/x/7", {"/x/7", "", "7"}},
      {R"(/x/(.*)(.+))", "/x/", kNoMatch},
      {R"(/x/([^/]+)(\d+))", "/x/ab12", {"/x/ab12", "ab1", "2"}},
      {R"(/x/([^/]+)(\d+))", "/x/7", kNoMatch},
      {R"(/x/([^/]+)(\d+))", "/x/12/", kNoMatch},
      {R"(/x/(\d+)(.*))", "/x/12/", {"/x/12/", "12", "/"}},
      {R"(/x/(\d+)(.*))", "/x/7", {"/x/7", "7", ""}},
      {R"(/x/(\d+)(.*))", "/x/ab12", kNoMatch},
      {R"(/x/([^/]+)/([^/]+))", "/x/a/b", {"/x/a/b", "a", "b"}},
      {R"(/x/([^/]+)/([^/]+))", "/x/a/b/c", kNoMatch},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(MatchOf(c.pattern, c.path), c.want)
        << c.pattern << " on '" << c.path << "'";
  }
}

}  // namespace
}  // namespace sheetlog::api
