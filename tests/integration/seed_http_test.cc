// `sheetlog serve --seed DIR` (and SHEETLOG_SEED) with the real binary: an empty store
// is filled from fixture files (NAME.csv, NAME.xlsx, NAME.entries.json) or from a
// `sheetlog backup` before /readyz answers; the cells equal those of an import of the
// same files; a store with data is left alone on a restart; a bad file refuses the
// start naming the file and line, writes nothing, and the next start with the file
// fixed seeds; --in-memory and the environment variable work the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "src/sheet/a1.h"
#include "tests/support/api_client.h"
#include "tests/support/command.h"
#include "tests/support/raw_http.h"
#include "tests/support/server_process.h"
#include "tests/support/spreadsheet_tools.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kOrdersCsv =
    "id,item,qty,price\n"
    "1,\"Widget, large\",3,2.5\n"
    "2,Gadget,10,\"1,000\"\n"
    "3,\"Quote \"\"q\"\"\",1,=C2*D2\n";

class SeedHttpTest : public ::testing::Test {
 protected:
  // A seed directory of `files` (name -> bytes); returns its path.
  std::string WriteSeed(const std::string& name,
                        const std::map<std::string, std::string>& files) {
    const std::string seed = dir_.File(name);
    fs::create_directories(seed);
    for (const auto& [file, bytes] : files) WriteFileBytes(seed + "/" + file, bytes);
    return seed;
  }

  // orders.csv, book.xlsx, orders.entries.json and notes.entries.json.
  std::string GoodSeed() {
    const std::string xlsx = dir_.File("book-source.xlsx");
    EXPECT_EQ(PythonZip(xlsx, MinimalXlsxParts(
                                  "<worksheet><sheetData>"
                                  "<row r=\"1\"><c r=\"A1\" t=\"inlineStr\"><is><t>name"
                                  "</t></is></c><c r=\"B1\"><v>42</v></c></row>"
                                  "<row r=\"3\"><c r=\"B3\"><f>B1*2</f><v>84</v></c>"
                                  "</row></sheetData></worksheet>")),
              "");
    return WriteSeed(
        "seed",
        {{"orders.csv", kOrdersCsv},
         {"book.xlsx", ReadFileBytes(xlsx)},
         {"orders.entries.json",
          "[\n"
          "  {\"type\": \"SetCell\", \"body\": {\"ref\": \"E1\", "
          "\"value\": \"total\"}},\n"
          "  {\"type\": \"Note\", \"body\": {\"text\": \"seeded\"}}\n"
          "]\n"},
         {"notes.entries.json", "[{\"type\": \"Note\", \"body\": \"only entries\"}]"}});
  }

  // name -> id of every sheet.
  static std::map<std::string, std::string> Sheets(httplib::Client& client) {
    JsonResponse list = Get(client, "/v1/sheets?limit=1000");
    EXPECT_EQ(list.status, 200) << list.raw;
    std::map<std::string, std::string> out;
    for (const json& sheet : list.body["sheets"]) {
      out[sheet.value("name", "")] = sheet.value("id", "");
    }
    return out;
  }

  // "B2" -> value of every non-null cell of A1:H10.
  static std::map<std::string, json> Cells(httplib::Client& client,
                                           const std::string& sheet) {
    JsonResponse r = Get(client, "/v1/sheets/" + sheet + "/cells?range=A1:H10");
    EXPECT_EQ(r.status, 200) << r.raw;
    std::map<std::string, json> out;
    for (size_t i = 0; i < r.body["rows"].size(); ++i) {
      for (size_t k = 0; k < r.body["rows"][i].size(); ++k) {
        const json& v = r.body["rows"][i][k];
        if (v.is_null()) continue;
        out[FormatCellRef({static_cast<int64_t>(i) + 1, static_cast<int64_t>(k) + 1})] =
            v;
      }
    }
    return out;
  }

  // The cells the server's import route makes of `bytes` on a new sheet.
  static std::map<std::string, json> Imported(httplib::Client& client,
                                              const std::string& bytes,
                                              const std::string& format) {
    const std::string sheet = CreateSheet(client);
    JsonResponse created = Post(client, "/v1/sheets/" + sheet + "/uploads",
                                {{"type", "Import"}, {"body", {{"format", format}}}});
    EXPECT_EQ(created.status, 201) << created.raw;
    JsonResponse put = RequestUrl(client, "PUT", created.body.value("url", ""), bytes);
    EXPECT_EQ(put.status, 200) << put.raw;
    JsonResponse done = Post(client,
                             "/v1/sheets/" + sheet + "/uploads/" +
                                 created.body.value("upload_id", "") + "/complete",
                             json::object());
    EXPECT_EQ(done.status, 201) << done.raw;
    return Cells(client, sheet);
  }

  static std::vector<std::string> Types(httplib::Client& client, const std::string& id) {
    std::vector<std::string> types;
    for (const json& entry : ReadAllEntries(client, id)) {
      types.push_back(entry.value("type", ""));
    }
    return types;
  }

  // Whether a SQLite data directory was left as it was before a refused start.
  static bool Untouched(const std::string& data_dir) {
    std::error_code ec;
    return !fs::exists(data_dir, ec) || fs::is_empty(data_dir, ec);
  }

  TempDir dir_;
};

TEST_F(SeedHttpTest, FixturesFillAnEmptyStoreWithTheFilesCells) {
  const std::string seed = GoodSeed();
  // info: the seed's own log line.
  ServerProcess server(
      ServerOptions(dir_.File("data"), {"--seed", seed, "--log-level", "info"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  std::map<std::string, std::string> sheets = Sheets(client);
  ASSERT_EQ(sheets.size(), 3u);
  ASSERT_TRUE(sheets.count("orders") && sheets.count("book") && sheets.count("notes"));

  // The same cells as the import route makes of the same files; then the entries.
  std::map<std::string, json> orders = Imported(client, kOrdersCsv, "csv");
  orders["E1"] = "total";
  EXPECT_EQ(Cells(client, sheets["orders"]), orders);
  EXPECT_EQ(Cells(client, sheets["orders"]).at("B2"), "Widget, large");
  EXPECT_EQ(Types(client, sheets["orders"]),
            (std::vector<std::string>{"Snapshot", "SetCells", "SetCell", "Note"}));
  EXPECT_EQ(Cells(client, sheets["book"]),
            Imported(client, ReadFileBytes(seed + "/book.xlsx"), "xlsx"));
  EXPECT_EQ(Cells(client, sheets["book"]).at("B3"), "=B1*2");
  EXPECT_EQ(Types(client, sheets["notes"]),
            (std::vector<std::string>{"Snapshot", "Note"}));
  EXPECT_NE(server.Log().find("seed: 3 sheets"), std::string::npos) << server.Log();
}

TEST_F(SeedHttpTest, ARestartWithTheSameSeedLeavesTheDataAlone) {
  const std::string seed = GoodSeed();
  const std::string data = dir_.File("data");
  std::string orders;
  {
    ServerProcess first(ServerOptions(data, {"--seed", seed}));
    ASSERT_TRUE(first.Start()) << first.error();
    httplib::Client client = first.Client();
    orders = Sheets(client).at("orders");
    SetCell(client, orders, "A1", "changed after the seed");
    ASSERT_EQ(first.Stop(), 0);
  }
  ServerProcess second(ServerOptions(data, {"--seed", seed, "--log-level", "info"}));
  ASSERT_TRUE(second.Start()) << second.error();
  httplib::Client client = second.Client();
  EXPECT_EQ(Sheets(client).size(), 3u);
  EXPECT_EQ(Cells(client, orders).at("A1"), "changed after the seed");
  EXPECT_NE(second.Log().find("seed " + seed + " skipped"), std::string::npos)
      << second.Log();
}

// A seed that stopped midway (kill -9, power loss) leaves its marker in the data
// directory: the next start empties the directory and seeds again instead of keeping
// half a seed.
TEST_F(SeedHttpTest, AnInterruptedSeedIsStartedAgainFromEmpty) {
  if (StoreOnPostgres()) GTEST_SKIP() << "the marker lives in a SQLite data directory";
  const std::string data = dir_.File("data");
  fs::create_directories(data);
  WriteFileBytes(data + "/.sheetlog-seeding", "");
  WriteFileBytes(data + "/half-written", "left by the interrupted seed");
  ServerProcess server(ServerOptions(data, {"--seed", GoodSeed()}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  EXPECT_EQ(Sheets(client).size(), 3u);
  EXPECT_FALSE(fs::exists(data + "/half-written"));
  EXPECT_FALSE(fs::exists(data + "/.sheetlog-seeding"));
}

TEST_F(SeedHttpTest, InMemory) {
  if (StoreOnPostgres()) {
    GTEST_SKIP() << "--in-memory keeps SQLite's tables in a temporary directory";
  }
  ServerProcess in_memory(ServerOptions::InMemory({"--seed", GoodSeed()}));
  ASSERT_TRUE(in_memory.Start()) << in_memory.error();
  httplib::Client client = in_memory.Client();
  std::map<std::string, std::string> sheets = Sheets(client);
  ASSERT_EQ(sheets.size(), 3u);
  EXPECT_EQ(Cells(client, sheets.at("orders")).at("E1"), "total");
}

TEST_F(SeedHttpTest, TheEnvironmentVariable) {
  ServerOptions options(dir_.File("data"));
  options.env.push_back({"SHEETLOG_SEED", GoodSeed()});
  ServerProcess from_env(options);
  ASSERT_TRUE(from_env.Start()) << from_env.error();
  httplib::Client client = from_env.Client();
  std::map<std::string, std::string> sheets = Sheets(client);
  ASSERT_EQ(sheets.size(), 3u);
  EXPECT_EQ(Cells(client, sheets.at("orders")).at("E1"), "total");
}

TEST_F(SeedHttpTest, ABackupSeedsAnEmptyDataDirectory) {
  if (StoreOnPostgres()) {
    ServerProcess refused(ServerOptions(
        dir_.File("data"), {"--seed", WriteSeed("backup", {{"manifest.json", "{}"}})}));
    EXPECT_FALSE(refused.Start());
    EXPECT_NE(refused.Log().find("seeds only the SQLite store"), std::string::npos)
        << refused.Log();
    return;
  }
  const std::string backup = dir_.File("backup");
  std::string sheet;
  {
    ServerProcess source(ServerOptions(dir_.File("source")));
    ASSERT_TRUE(source.Start()) << source.error();
    httplib::Client client = source.Client();
    sheet = CreateSheet(client);
    SetCell(client, sheet, "C3", 7);
    CommandResult r =
        RunCommand(std::string(SHEETLOG_BINARY) + " backup --to " + ShellQuote(backup) +
                   " --server http://127.0.0.1:" + std::to_string(source.port()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  for (bool in_memory : {false, true}) {
    ServerProcess seeded(in_memory
                             ? ServerOptions::InMemory({"--seed", backup})
                             : ServerOptions(dir_.File("data"), {"--seed", backup}));
    ASSERT_TRUE(seeded.Start()) << seeded.error();
    httplib::Client client = seeded.Client();
    EXPECT_EQ(Cells(client, sheet), (std::map<std::string, json>{{"C3", 7}}))
        << "in memory: " << in_memory;
  }
}

TEST_F(SeedHttpTest, ABadFileRefusesTheStartNamingFileAndLineAndWritesNothing) {
  const std::string data = dir_.File("data");
  struct Case {
    std::string file;
    std::string bytes;
    std::string message;  // expected after "<seed>/"
  };
  const std::vector<Case> cases = {
      {"orders.csv", "a,b\n1,2\n3,\xff\n", "orders.csv:3: field 2: not valid UTF-8"},
      {"book.xlsx", "not a zip", "book.xlsx: "},
      {"orders.entries.json",
       "[\n  {\"type\": \"Note\"},\n  {\"type\": \"SetCell\",\n   \"body\": "
       "{\"ref\": \"C0\", \"value\": 1}}\n]",
       "orders.entries.json:3: entry 2: SetCell: field 'ref'"},
      {"orders.entries.json", "[{\"type\": \"Note\",}]",
       "orders.entries.json:1: not JSON"},
      {"orders.entries.json", "[{\"type\": \"Snapshot\"}]",
       "orders.entries.json:1: entry 1: entry type 'Snapshot' is reserved for the "
       "system"},
      {"readme.txt", "hello", "readme.txt: not a seed file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file + ": " + c.message);
    fs::remove_all(dir_.File("bad"));
    const std::string seed =
        WriteSeed("bad", {{"good.csv", "x,y\n1,2\n"}, {c.file, c.bytes}});
    ServerProcess refused(ServerOptions(data, {"--seed", seed}));
    EXPECT_FALSE(refused.Start());
    EXPECT_NE(refused.Log().find(seed + "/" + c.message), std::string::npos)
        << refused.Log();
    if (!StoreOnPostgres()) {
      EXPECT_TRUE(Untouched(data));
    }
  }
  // Fixed: the next start seeds, and nothing from the refused ones is there.
  ServerProcess fixed(ServerOptions(data, {"--seed", GoodSeed()}));
  ASSERT_TRUE(fixed.Start()) << fixed.error();
  httplib::Client client = fixed.Client();
  std::map<std::string, std::string> sheets = Sheets(client);
  EXPECT_EQ(sheets.size(), 3u);
  EXPECT_EQ(sheets.count("good"), 0u);
}

}  // namespace
}  // namespace sheetlog::testing
