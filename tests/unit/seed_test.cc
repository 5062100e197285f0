// The pure parts of `serve --seed` (src/app/seed.h): reading and checking a fixtures
// directory, the SetCells bodies of a file, and where a refusal points.
#include "src/app/seed.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "src/sheet/sheet_edit.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

using nlohmann::json;

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(SeedTest, EntriesAreCheckedAndNameTheirLine) {
  Result<std::vector<SeedSheet::Entry>> ok = ParseSeedEntries(
      "[{\"type\": \"SetCell\", \"body\": {\"ref\": \"A1\", \"value\": 1}},\n"
      " {\"type\": \"Note\", \"version\": 3}]");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0].type, "SetCell");
  EXPECT_EQ(json::parse(*(*ok)[0].body), json::parse(R"({"ref":"A1","value":1})"));
  EXPECT_EQ((*ok)[1].version, 3);
  EXPECT_FALSE((*ok)[1].body.has_value());

  // A bracket inside a string does not move the count of elements.
  Result<std::vector<SeedSheet::Entry>> bad = ParseSeedEntries(
      "[\n{\"type\": \"Note\", \"body\": \"[{,\"},\n\n{\"type\": \"\"}]");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("4: entry 2: field 'type' is required", 0), 0u)
      << bad.status().message();

  EXPECT_EQ(
      ParseSeedEntries("{}").status().message().rfind("1: expected a JSON array", 0), 0u);
  EXPECT_EQ(ParseSeedEntries("[\n\n  x]").status().message().rfind("3: not JSON", 0), 0u)
      << ParseSeedEntries("[\n\n  x]").status().message();
  EXPECT_NE(ParseSeedEntries("[{\"type\": \"Import\", \"body\": {\"format\": \"csv\"}}]")
                .status()
                .message()
                .find("Import is not a seed entry"),
            std::string::npos);
  EXPECT_NE(ParseSeedEntries("[{\"type\": \"Note\", \"seq\": 1}]")
                .status()
                .message()
                .find("unknown field 'seq'"),
            std::string::npos);
}

TEST(SeedTest, CellBodiesStayWithinTheLimitAndHoldEveryCell) {
  std::string csv;
  for (int row = 0; row < 200; ++row) csv += "alpha,beta,gamma,delta,epsilon\n";
  int64_t cells = 0;
  Result<std::vector<std::string>> bodies = SeedCellBodies(csv, "csv", 2048, &cells);
  ASSERT_TRUE(bodies.ok()) << bodies.status().ToString();
  EXPECT_EQ(cells, 1000);
  EXPECT_GT(bodies->size(), 1u);
  std::set<std::string> refs;
  for (const std::string& body : *bodies) {
    EXPECT_LE(body.size(), 2048u);
    const json parsed = json::parse(body);
    ASSERT_TRUE(ValidateAppend("SetCells", 1, parsed).ok());
    for (const auto& [ref, value] : parsed["cells"].items()) refs.insert(ref);
  }
  EXPECT_EQ(refs.size(), 1000u);
  EXPECT_TRUE(refs.count("A1") && refs.count("E200"));

  EXPECT_TRUE(SeedCellBodies("", "csv", 2048, &cells)->empty());
  EXPECT_EQ(cells, 0);
}

TEST(SeedTest, ReadSeedNamesTheFileAndLine) {
  testing::TempDir dir;
  Write(dir.File("b.csv"), "x,y\n1,2\n");
  Write(dir.File("a.entries.json"), "[{\"type\": \"Note\"}]");
  Write(dir.File(".hidden"), "ignored");
  Result<Seed> seed = ReadSeed(dir.path(), 16 * 1024);
  ASSERT_TRUE(seed.ok()) << seed.status().ToString();
  EXPECT_FALSE(seed->backup);
  ASSERT_EQ(seed->sheets.size(), 2u);
  EXPECT_EQ(seed->sheets[0].name, "a");
  EXPECT_EQ(seed->sheets[1].name, "b");
  EXPECT_EQ(seed->sheets[1].cells, 4);
  ASSERT_EQ(seed->sheets[1].entries.size(), 1u);
  EXPECT_EQ(seed->sheets[1].entries[0].type, "SetCells");

  Write(dir.File("b.csv"), "x,y\n1,\"open\n");
  EXPECT_EQ(
      ReadSeed(dir.path(), 16 * 1024).status().message().rfind(dir.File("b.csv:"), 0), 0u)
      << ReadSeed(dir.path(), 16 * 1024).status().message();
  Write(dir.File("b.csv"), "x,y\n1,\xff\n");
  EXPECT_EQ(ReadSeed(dir.path(), 16 * 1024).status().message(),
            dir.File("b.csv") + ":2: field 2: not valid UTF-8 (save the file as UTF-8)");
  Write(dir.File("b.csv"), "x\n");
  Write(dir.File("b.xlsx"), "x");
  EXPECT_NE(ReadSeed(dir.path(), 16 * 1024).status().message().find("one CSV or XLSX"),
            std::string::npos);
  std::filesystem::remove(dir.File("b.xlsx"));
  Write(dir.File("manifest.json"), "{}");
  EXPECT_TRUE(ReadSeed(dir.path(), 16 * 1024)->backup);
  EXPECT_TRUE(ReadSeed(dir.File("missing"), 16 * 1024).status().IsNotFound());
}

}  // namespace
}  // namespace sheetlog
