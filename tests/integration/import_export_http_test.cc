// Files in and out over real HTTP against the real binary: Import entries through
// the upload flow (files made by openpyxl, Gnumeric and Python's csv module), refusal
// of bad files with nothing written, the snapshot pipeline building imported sheets,
// XLSX export read back by openpyxl and ssconvert, the `sheetlog import/export`
// commands, and the export bound.
#include <gtest/gtest.h>

#include <map>

#include "emulator/json_text.h"
#include "src/sheet/csv.h"
#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/spreadsheet_tools.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class ImportExportHttpTest : public ApiTest {
 protected:
  void SetUp() override {
    if (!HaveOpenpyxl()) GTEST_SKIP() << "python3-openpyxl is not installed";
    StartServer(ServerOptions(dir_.File("data")));
  }

  // The three steps of an upload; returns Complete's response.
  JsonResponse Import(const std::string& sheet, const std::string& file_bytes,
                      const json& body) {
    JsonResponse created = Post(*client_, "/v1/sheets/" + sheet + "/uploads",
                                {{"type", "Import"}, {"body", body}});
    EXPECT_EQ(created.status, 201) << created.raw;
    JsonResponse put =
        RequestUrl(*client_, "PUT", created.body.value("url", ""), file_bytes);
    EXPECT_EQ(put.status, 200) << put.raw;
    return Post(*client_,
                "/v1/sheets/" + sheet + "/uploads/" +
                    created.body.value("upload_id", "") + "/complete",
                json::object());
  }

  int64_t NextSeq(const std::string& sheet) {
    return Get(*client_, "/v1/sheets/" + sheet).body.value("next_seq", int64_t{-1});
  }

  // "B2" -> value of every non-null cell in `range`.
  std::map<std::string, json> Cells(const std::string& sheet, const std::string& range) {
    JsonResponse r = Get(*client_, "/v1/sheets/" + sheet + "/cells?range=" + range);
    EXPECT_EQ(r.status, 200) << r.raw;
    std::map<std::string, json> out;
    const CellRange parsed = ParseRange(range).value();
    for (size_t i = 0; i < r.body["rows"].size(); ++i) {
      for (size_t k = 0; k < r.body["rows"][i].size(); ++k) {
        const json& v = r.body["rows"][i][k];
        if (v.is_null()) continue;
        out[FormatCellRef({parsed.first.row + static_cast<int64_t>(i),
                           parsed.first.col + static_cast<int64_t>(k)})] = v;
      }
    }
    return out;
  }

  // A tool's CSV typed by our documented rules (csv.h), same shape as Cells(). False if
  // it does not parse.
  static bool TypedCsvFields(const std::string& bytes, std::map<std::string, json>* out) {
    CsvParser parser([&](const CellRef& ref, Cell cell) {
      (*out)[FormatCellRef(ref)] = cell.value.ToJson();
      return Status::OK();
    });
    return parser.Feed(bytes).ok() && parser.Finish().ok();
  }

  // Values of an openpyxl read-back, same shape as Cells().
  static std::map<std::string, json> ValuesOf(const json& tool_cells) {
    std::map<std::string, json> out;
    for (auto it = tool_cells.begin(); it != tool_cells.end(); ++it) {
      out[it.key()] = it.value()["value"];
    }
    return out;
  }

  static void ExpectSameValues(const std::map<std::string, json>& ours,
                               const std::map<std::string, json>& theirs) {
    ASSERT_EQ(ours.size(), theirs.size());
    for (const auto& [ref, value] : theirs) {
      ASSERT_TRUE(ours.count(ref)) << ref;
      if (value.is_number()) {
        EXPECT_DOUBLE_EQ(ours.at(ref).get<double>(), value.get<double>()) << ref;
      } else {
        EXPECT_EQ(ours.at(ref), value) << ref;
      }
    }
  }

  std::string Sheetlog(const std::string& args, int* status) {
    std::string output;
    *status =
        RunShell(std::string(SHEETLOG_BINARY) + " " + args +
                     " --server http://127.0.0.1:" + std::to_string(server_->port()),
                 &output);
    return output;
  }
};

json ToolCells() {
  return json{{"A1", {{"value", "city"}}},
              {"B1", {{"value", "population"}}},
              {"A2", {{"value", "Z\u00fcrich, CH"}}},
              {"B2", {{"value", 421878}}},
              {"C2", {{"value", 0.5}, {"format", "0.0%"}}},
              {"A3", {{"value", "line\nbreak"}}},
              {"B3", {{"value", true}}},
              {"C3", {{"value", "=B2*2"}}}};
}

TEST_F(ImportExportHttpTest, OpenpyxlXlsxImportGivesTheCellsOpenpyxlReads) {
  const std::string path = dir_.File("in.xlsx");
  ASSERT_EQ(OpenpyxlWrite(path, ToolCells()), "");
  std::string error;
  json theirs = OpenpyxlRead(path, "", &error);
  ASSERT_EQ(error, "");
  const std::string sheet = CreateSheet(*client_);
  JsonResponse done = Import(sheet, ReadFileBytes(path), {{"format", "xlsx"}});
  ASSERT_EQ(done.status, 201) << done.raw;
  EXPECT_TRUE(done.body["external"].is_string() || done.body["external"].is_object())
      << done.raw;
  ExpectSameValues(Cells(sheet, "A1:D4"), ValuesOf(theirs));
  JsonResponse formats = Get(*client_, "/v1/sheets/" + sheet + "/cells?range=C2:C2");
  EXPECT_EQ(formats.body["formats"][0][0], "0.0%") << formats.raw;
}

TEST_F(ImportExportHttpTest, GnumericCsvAndXlsxImportGiveTheCellsTheToolsRead) {
  if (!HaveProgram("ssconvert")) GTEST_SKIP() << "gnumeric (ssconvert) is not installed";
  // openpyxl writes the workbook, Gnumeric converts it to CSV and to its own XLSX.
  const std::string source = dir_.File("source.xlsx");
  json cells = ToolCells();
  cells.erase("C3");  // ssconvert's CSV writes a formula's value, not its text
  ASSERT_EQ(OpenpyxlWrite(source, cells), "");
  const std::string csv = dir_.File("gnumeric.csv");
  const std::string xlsx = dir_.File("gnumeric.xlsx");
  ASSERT_EQ(Ssconvert(source, csv), "");
  ASSERT_EQ(Ssconvert(source, xlsx), "");

  // The CSV: Gnumeric's own text, typed by our documented rules, is what we hold.
  const std::string csv_bytes = ReadFileBytes(csv);
  std::map<std::string, json> expected_csv;
  ASSERT_TRUE(TypedCsvFields(csv_bytes, &expected_csv));
  EXPECT_EQ(expected_csv["A2"], "Z\u00fcrich, CH");
  EXPECT_EQ(expected_csv["B2"], 421878);
  const std::string csv_sheet = CreateSheet(*client_);
  ASSERT_EQ(Import(csv_sheet, csv_bytes, {{"format", "csv"}}).status, 201);
  ExpectSameValues(Cells(csv_sheet, "A1:D4"), expected_csv);

  // The XLSX: what openpyxl reads from Gnumeric's file.
  std::string error;
  json theirs = OpenpyxlRead(xlsx, "", &error);
  ASSERT_EQ(error, "");
  const std::string xlsx_sheet = CreateSheet(*client_);
  ASSERT_EQ(Import(xlsx_sheet, ReadFileBytes(xlsx), {{"format", "xlsx"}}).status, 201);
  ExpectSameValues(Cells(xlsx_sheet, "A1:D4"), ValuesOf(theirs));
}

// LibreOffice (soffice --headless --convert-to): it saves openpyxl's workbook as its own
// XLSX and CSV; each imports as the cells LibreOffice itself reads from it.
TEST_F(ImportExportHttpTest, LibreOfficeXlsxAndCsvImportGiveTheCellsLibreOfficeReads) {
  if (!HaveProgram("soffice")) GTEST_SKIP() << "LibreOffice (soffice) is not installed";
  const std::string source = dir_.File("source.xlsx");
  json cells = ToolCells();
  cells["D4"] = {{"value", -12.375}};
  ASSERT_EQ(OpenpyxlWrite(source, cells), "");
  const std::string out = dir_.File("libreoffice");
  ASSERT_EQ(LibreOfficeConvert(source, "xlsx:Calc MS Excel 2007 XML", out), "");
  ASSERT_EQ(LibreOfficeConvert(source, "csv:Text - txt - csv (StarCalc):44,34,76", out),
            "");

  std::string error;
  json theirs = LibreOfficeRead(out + "/source.xlsx", &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(theirs["C3"]["value"], "=B2*2");
  const std::string xlsx_sheet = CreateSheet(*client_);
  ASSERT_EQ(Import(xlsx_sheet, ReadFileBytes(out + "/source.xlsx"), {{"format", "xlsx"}})
                .status,
            201);
  ExpectSameValues(Cells(xlsx_sheet, "A1:D4"), ValuesOf(theirs));
  // LibreOffice computed the formula when it saved; its result comes along.
  JsonResponse formula = Get(*client_, "/v1/sheets/" + xlsx_sheet + "/cells?range=B3:C3");
  // (LibreOffice has no boolean cells: it saved B3's TRUE as the formula TRUE() with
  // its result, and reads it back the same way.)
  EXPECT_EQ(formula.body["rows"], ParseJson(R"J([["=TRUE()", "=B2*2"]])J"))
      << formula.raw;
  EXPECT_EQ(formula.body["cached"], ParseJson("[[true, 843756]]")) << formula.raw;

  // The CSV holds LibreOffice's text as shown ("50.0%"), quoted where RFC 4180 needs
  // it: each field typed by our documented rules is what we hold.
  const std::string csv_bytes = ReadFileBytes(out + "/source.csv");
  std::map<std::string, json> expected_csv;
  ASSERT_TRUE(TypedCsvFields(csv_bytes, &expected_csv));
  EXPECT_EQ(expected_csv["A2"], "Z\u00fcrich, CH");
  EXPECT_EQ(expected_csv["A3"], "line\nbreak");
  EXPECT_EQ(expected_csv["B2"], 421878);
  EXPECT_EQ(expected_csv["B3"], true);
  EXPECT_EQ(expected_csv["C2"], "50.0%");  // a percentage stays text (csv.h)
  EXPECT_EQ(expected_csv["D4"], -12.375);
  const std::string csv_sheet = CreateSheet(*client_);
  ASSERT_EQ(Import(csv_sheet, csv_bytes, {{"format", "csv"}}).status, 201);
  ExpectSameValues(Cells(csv_sheet, "A1:D4"), expected_csv);
}

TEST_F(ImportExportHttpTest, PythonCsvWithEveryQuotingCaseImports) {
  const std::string path = dir_.File("py.csv");
  const std::string program = dir_.File("write_csv.py");
  WriteFileBytes(program,
                 "import csv, sys\n"
                 "with open(sys.argv[1], 'w', newline='', encoding='utf-8-sig') as f:\n"
                 "    w = csv.writer(f)\n"
                 "    w.writerow(['a,b', 'say \"hi\"', 'two\\nlines', '', 7, '007'])\n"
                 "    w.writerow(['TRUE', '3.5', '=A1'])\n");
  std::string output;
  ASSERT_EQ(RunShell("python3 " + program + " " + path, &output), 0) << output;
  const std::string sheet = CreateSheet(*client_);
  JsonResponse done =
      Import(sheet, ReadFileBytes(path), {{"format", "csv"}, {"at", "B2"}});
  ASSERT_EQ(done.status, 201) << done.raw;
  ExpectSameValues(Cells(sheet, "A1:H4"), {{"B2", "a,b"},
                                           {"C2", "say \"hi\""},
                                           {"D2", "two\nlines"},
                                           {"F2", 7},
                                           {"G2", "007"},
                                           {"B3", true},
                                           {"C3", 3.5},
                                           {"D3", "=A1"}});
}

TEST_F(ImportExportHttpTest, ReplaceClearsTheSheetAndMergeWritesOver) {
  const std::string sheet = CreateSheet(*client_);
  ASSERT_EQ(
      Post(*client_, "/v1/sheets/" + sheet + "/entries",
           {{"type", "SetCells"}, {"body", {{"cells", {{"A1", "old"}, {"D9", 1}}}}}})
          .status,
      201);
  ASSERT_EQ(Import(sheet, "x,y\n", {{"format", "csv"}, {"mode", "merge"}}).status, 201);
  ExpectSameValues(Cells(sheet, "A1:D9"), {{"A1", "x"}, {"B1", "y"}, {"D9", 1}});
  ASSERT_EQ(Import(sheet, "z\n", {{"format", "csv"}, {"at", "C3"}}).status, 201);
  ExpectSameValues(Cells(sheet, "A1:D9"), {{"C3", "z"}});
}

// A block of formulas imported at L3 reads as a spreadsheet pastes it
// there: relative references move 2 rows and 11 columns (single and shared formulas,
// references to another worksheet), absolute ones stay; the exported XLSX agrees.
TEST_F(ImportExportHttpTest, XlsxFormulasImportedAwayFromA1MoveWithTheirCells) {
  const std::string file = dir_.File("formulas.xlsx");
  ASSERT_EQ(
      PythonZip(file, MinimalXlsxParts(
                          "<worksheet><sheetData>"
                          "<row r=\"2\"><c r=\"D2\"><v>1</v></c>"
                          "<c r=\"E2\"><f t=\"shared\" ref=\"E2:E4\" si=\"0\">D2*2</f>"
                          "<v>2</v></c>"
                          "<c r=\"F2\"><f>$D$2+D3</f><v>3</v></c>"
                          "<c r=\"G2\"><f>Data!B2</f><v>0</v></c></row>"
                          "<row r=\"3\"><c r=\"D3\"><v>2</v></c>"
                          "<c r=\"E3\"><f t=\"shared\" si=\"0\"/><v>4</v></c></row>"
                          "<row r=\"4\"><c r=\"D4\"><v>3</v></c>"
                          "<c r=\"E4\"><f t=\"shared\" si=\"0\"/><v>6</v></c></row>"
                          "<row r=\"7\"><c r=\"D7\"><f>SUM(D2:D6)</f><v>6</v></c>"
                          "</row></sheetData></worksheet>")),
      "");
  const std::string sheet = CreateSheet(*client_);
  JsonResponse done =
      Import(sheet, ReadFileBytes(file), {{"format", "xlsx"}, {"at", "L3"}});
  ASSERT_EQ(done.status, 201) << done.raw;
  const std::map<std::string, json> expected = {
      {"O4", 1},          {"O5", 2},          {"O6", 3},
      {"P4", "=O4*2"},    {"P5", "=O5*2"},    {"P6", "=O6*2"},
      {"Q4", "=$D$2+O5"}, {"R4", "=Data!M4"}, {"O9", "=SUM(O4:O8)"}};
  EXPECT_EQ(Cells(sheet, "A1:Z20"), expected);

  // After a snapshot (built from the file by the pipeline) the reads agree...
  ASSERT_EQ(Post(*client_, "/v1/sheets/" + sheet + "/snapshots", json::object()).status,
            201);
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, sheet, {.at_least = 2}));
  ASSERT_EQ(Snapshots(*client_, sheet).size(), 2u);
  // Read as of the snapshot's seq: from the snapshot itself (rows O4:R9).
  JsonResponse at_snapshot =
      Get(*client_, "/v1/sheets/" + sheet + "/cells?range=O4:R9&at=2");
  ASSERT_EQ(at_snapshot.status, 200) << at_snapshot.raw;
  EXPECT_EQ(at_snapshot.headers.find("X-Snapshot-Seq")->second, "2") << at_snapshot.raw;
  EXPECT_EQ(at_snapshot.body["rows"][0], json({1, "=O4*2", "=$D$2+O5", "=Data!M4"}));
  EXPECT_EQ(at_snapshot.body["rows"][1], json({2, "=O5*2", nullptr, nullptr}));
  EXPECT_EQ(at_snapshot.body["rows"][5],
            json({"=SUM(O4:O8)", nullptr, nullptr, nullptr}));
  EXPECT_EQ(Cells(sheet, "A1:Z20"), expected);
  // ...and so does the exported workbook, read by openpyxl.
  httplib::Result got = client_->Get("/v1/sheets/" + sheet + "/export?format=xlsx");
  ASSERT_TRUE(got);
  ASSERT_EQ(got->status, 200) << got->body;
  const std::string exported = dir_.File("exported.xlsx");
  WriteFileBytes(exported, got->body);
  std::string error;
  json theirs = OpenpyxlRead(exported, "", &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(ValuesOf(theirs), expected);

  // At A1 the file's formulas are kept as written.
  const std::string at_a1 = CreateSheet(*client_);
  ASSERT_EQ(Import(at_a1, ReadFileBytes(file), {{"format", "xlsx"}}).status, 201);
  EXPECT_EQ(Cells(at_a1, "D3:F7").at("D7"), "=SUM(D2:D6)");
  EXPECT_EQ(Cells(at_a1, "D3:F7").at("E3"), "=D3*2");
}

TEST_F(ImportExportHttpTest, BadFilesAreRefusedWithClearErrorsAndNothingWritten) {
  const std::string sheet = CreateSheet(*client_);
  const int64_t before = NextSeq(sheet);

  JsonResponse quote = Import(sheet, "a,b\n\"never closed,1\n2,3\n", {{"format", "csv"}});
  EXPECT_EQ(quote.status, 400) << quote.raw;
  EXPECT_EQ(quote.body["error"]["code"], "ValidationError");
  EXPECT_NE(quote.raw.find("unterminated quoted field (opened at line 2"),
            std::string::npos)
      << quote.raw;

  const std::string good = dir_.File("good.xlsx");
  ASSERT_EQ(OpenpyxlWrite(good, ToolCells()), "");
  std::string bytes = ReadFileBytes(good);
  JsonResponse truncated =
      Import(sheet, bytes.substr(0, bytes.size() / 2), {{"format", "xlsx"}});
  EXPECT_EQ(truncated.status, 400) << truncated.raw;
  EXPECT_NE(truncated.raw.find("truncated or not a zip"), std::string::npos)
      << truncated.raw;

  const std::string bomb = dir_.File("bomb.xlsx");
  ASSERT_EQ(PythonZip(bomb, MinimalXlsxParts(
                                "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY a \"aaaa\">"
                                "<!ENTITY b \"&a;&a;&a;&a;\">]><worksheet><sheetData>"
                                "<row><c t=\"inlineStr\"><is><t>&b;</t></is></c></row>"
                                "</sheetData></worksheet>")),
            "");
  JsonResponse bombed = Import(sheet, ReadFileBytes(bomb), {{"format", "xlsx"}});
  EXPECT_EQ(bombed.status, 400) << bombed.raw;
  EXPECT_NE(bombed.raw.find("DOCTYPE"), std::string::npos) << bombed.raw;

  std::string claiming = bytes;
  ASSERT_TRUE(SetZipSizeClaim(&claiming, "xl/worksheets/sheet1.xml", 2000000000u));
  JsonResponse claimed = Import(sheet, claiming, {{"format", "xlsx"}});
  EXPECT_EQ(claimed.status, 400) << claimed.raw;
  EXPECT_NE(claimed.raw.find("claims 2000000000 bytes"), std::string::npos)
      << claimed.raw;

  JsonResponse wrong_sheet =
      Import(sheet, bytes, {{"format", "xlsx"}, {"sheet", "NoSuchSheet"}});
  EXPECT_EQ(wrong_sheet.status, 400) << wrong_sheet.raw;

  // Nothing was written, and an Import cannot be posted without its file.
  EXPECT_EQ(NextSeq(sheet), before);
  JsonResponse inline_import = Post(*client_, "/v1/sheets/" + sheet + "/entries",
                                    {{"type", "Import"}, {"body", {{"format", "csv"}}}});
  EXPECT_EQ(inline_import.status, 400) << inline_import.raw;
  EXPECT_NE(inline_import.raw.find("upload"), std::string::npos);
  EXPECT_EQ(NextSeq(sheet), before);
}

TEST_F(ImportExportHttpTest, SnapshotOfAnImportedSheetHoldsTheImportedCells) {
  const std::string sheet = CreateSheet(*client_);
  std::string csv;
  for (int r = 1; r <= 300; ++r) {
    csv += std::to_string(r) + ",row " + std::to_string(r) + "," + (r % 2 ? "TRUE" : "") +
           "\r\n";
  }
  ASSERT_EQ(Import(sheet, csv, {{"format", "csv"}}).status, 201);
  const auto before = Cells(sheet, "A1:C300");
  ASSERT_EQ(before.size(), 750u);
  JsonResponse snap =
      Post(*client_, "/v1/sheets/" + sheet + "/snapshots", json::object());
  ASSERT_EQ(snap.status, 201) << snap.raw;
  const int64_t snap_seq = snap.body["seq"];
  ASSERT_TRUE(Eventually([&] {
    JsonResponse r = Get(*client_, "/v1/sheets/" + sheet + "/cells?range=A1:A1");
    return r.status == 200 && r.headers.find("X-Snapshot-Seq") != r.headers.end() &&
           r.headers.find("X-Snapshot-Seq")->second == std::to_string(snap_seq);
  }));
  EXPECT_EQ(Cells(sheet, "A1:C300"), before);
}

// A replace import is read (cells at both ends, an export) and
// snapshotted without its cells ever being held. Measured as the growth of the
// server's peak memory over the whole flow for a file of `rows` x 250 cells, on a
// fresh server whose sanitizer keeps little freed memory in quarantine (ASan holds up
// to 256 MB by default, which would measure the allocator, not us).
class BoundedImportTest : public ImportExportHttpTest {
 protected:
  int64_t PeakGrowthKb(int rows) {
    constexpr int kCols = 250;
    const char* asan = std::getenv("ASAN_OPTIONS");
    ServerOptions options(dir_.File("bounded-" + std::to_string(rows)));
    options.env.push_back(
        {"ASAN_OPTIONS", std::string(asan ? asan : "") +
                             ":quarantine_size_mb=4:thread_local_quarantine_size_kb=64"});
    ServerProcess server(options);
    EXPECT_TRUE(server.Start()) << server.error();
    client_ = std::make_unique<httplib::Client>(server.Client());

    std::string csv;
    for (int r = 1; r <= rows; ++r) {
      for (int c = 1; c <= kCols; ++c) {
        if (c > 1) csv += ',';
        csv += std::to_string(r * 1000 + c);
      }
      csv += "\r\n";
    }
    const std::string sheet = CreateSheet(*client_);
    // Every path once on a small import first, then measure from there.
    EXPECT_EQ(Import(sheet, "1,2\n3,4\n", {{"format", "csv"}}).status, 201);
    EXPECT_EQ(Cells(sheet, "A1:B2").size(), 4u);
    const int64_t before = server.PeakRssKb();

    EXPECT_EQ(Import(sheet, csv, {{"format", "csv"}}).status, 201);
    const std::string last_row = std::to_string(rows);
    auto corners = [&] {
      auto top = Cells(sheet, "A1:B1");
      auto bottom = Cells(sheet, "IO" + last_row + ":IP" + last_row);
      return std::vector<json>{top["A1"], top["B1"], bottom["IO" + last_row],
                               bottom["IP" + last_row]};
    };
    const std::vector<json> expected = {1001, 1002, rows * 1000 + 249, rows * 1000 + 250};
    EXPECT_EQ(corners(), expected);  // from the file: no snapshot covers it yet
    auto exported = client_->Get(("/v1/sheets/" + sheet + "/export?format=csv").c_str());
    EXPECT_TRUE(exported && exported->status == 200 && exported->body == csv);

    JsonResponse snap =
        Post(*client_, "/v1/sheets/" + sheet + "/snapshots", json::object());
    EXPECT_EQ(snap.status, 201) << snap.raw;
    const std::string snap_seq = std::to_string(snap.body.value("seq", int64_t{-1}));
    EXPECT_TRUE(Eventually(
        [&] {
          JsonResponse r = Get(*client_, "/v1/sheets/" + sheet + "/cells?range=A1:A1");
          auto header = r.headers.find("X-Snapshot-Seq");
          return r.status == 200 && header != r.headers.end() &&
                 header->second == snap_seq;
        },
        120));
    EXPECT_EQ(corners(), expected);  // now from the snapshot
    const int64_t growth = server.PeakRssKb() - before;
    RecordProperty("peak_rss_growth_kb_" + std::to_string(rows * kCols),
                   std::to_string(growth));
    return growth;
  }
};

TEST_F(BoundedImportTest, PeakMemoryDoesNotGrowWithTheImportedFile) {
  const int64_t small = PeakGrowthKb(600);   // 150,000 cells, 1.4 MB
  const int64_t large = PeakGrowthKb(2400);  // 600,000 cells, 5.6 MB
  // Holding the cells would cost at least 88 bytes each as PlacedCells: the 450,000
  // more cells of the large file alone would add 39 MB.
  EXPECT_LT(large - small, 8 * 1024) << small << " kB then " << large << " kB";
  EXPECT_LT(large, 48 * 1024);
}

TEST_F(ImportExportHttpTest, XlsxExportReadsBackInOpenpyxlGnumericAndLibreOffice) {
  const std::string sheet = CreateSheet(*client_);
  ASSERT_EQ(Post(*client_, "/v1/sheets/" + sheet + "/entries",
                 {{"type", "SetCells"},
                  {"body",
                   {{"cells",
                     {{"A1", "name"},
                      {"B1", 2.5},
                      {"C1", true},
                      {"A2", "comma, \"quote\""},
                      {"B2", {{"value", 45306}, {"format", "yyyy-mm-dd"}}},
                      {"D3", -1e-7}}}}}})
                .status,
            201);
  httplib::Result got = client_->Get("/v1/sheets/" + sheet + "/export?format=xlsx");
  ASSERT_TRUE(got);
  ASSERT_EQ(got->status, 200) << got->body;
  EXPECT_EQ(got->get_header_value("Content-Type"),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
  const std::string path = dir_.File("export.xlsx");
  WriteFileBytes(path, got->body);
  std::string error;
  json theirs = OpenpyxlRead(path, "", &error);
  ASSERT_EQ(error, "");
  ExpectSameValues(Cells(sheet, "A1:D3"), ValuesOf(theirs));
  EXPECT_EQ(theirs["B2"]["format"], "yyyy-mm-dd");

  if (!HaveProgram("ssconvert")) GTEST_SKIP() << "gnumeric (ssconvert) is not installed";
  const std::string csv = dir_.File("export.csv");
  ASSERT_EQ(Ssconvert(path, csv), "");
  const std::string text = ReadFileBytes(csv);
  EXPECT_NE(text.find("name,2.5,TRUE"), std::string::npos) << text;
  // Gnumeric renders the date by its own reading of the format (2024/01/15 here).
  EXPECT_NE(text.find("\"comma, \"\"quote\"\"\",2024"), std::string::npos) << text;
  EXPECT_NE(text.find(",,,-1E-07"), std::string::npos) << text;

  if (!HaveProgram("soffice")) GTEST_SKIP() << "LibreOffice (soffice) is not installed";
  json libreoffice = LibreOfficeRead(path, &error);
  ASSERT_EQ(error, "");
  std::map<std::string, json> ours = Cells(sheet, "A1:D3");
  // LibreOffice keeps a boolean as a formula TRUE() (it has no boolean cell type).
  EXPECT_EQ(libreoffice["C1"]["value"], "=TRUE()");
  // and writes a date as a date even among raw values: day 45306 with our format.
  EXPECT_EQ(libreoffice["B2"]["value"], "2024-01-15");
  for (const char* ref : {"C1", "B2"}) {
    libreoffice.erase(ref);
    ours.erase(ref);
  }
  ExpectSameValues(ours, ValuesOf(libreoffice));
}

TEST_F(ImportExportHttpTest, EmptySheetExportsAnEmptyWorkbook) {
  const std::string sheet = CreateSheet(*client_);
  httplib::Result got = client_->Get("/v1/sheets/" + sheet + "/export?format=xlsx");
  ASSERT_TRUE(got);
  ASSERT_EQ(got->status, 200);
  const std::string path = dir_.File("empty.xlsx");
  WriteFileBytes(path, got->body);
  std::string error;
  EXPECT_EQ(OpenpyxlRead(path, "", &error), json::object());
  EXPECT_EQ(error, "");
}

TEST_F(ImportExportHttpTest, CommandLineImportAndExport) {
  const std::string xlsx = dir_.File("cli.xlsx");
  ASSERT_EQ(OpenpyxlWrite(xlsx, ToolCells()), "");
  int status = 0;
  std::string out = Sheetlog("import " + xlsx + " --at B2", &status);
  ASSERT_EQ(status, 0) << out;
  json result = ParseJsonOrDiscarded(out);
  ASSERT_TRUE(result.is_object()) << out;
  const std::string sheet = result.value("sheet", "");
  EXPECT_EQ(Cells(sheet, "B2:B2")["B2"], "city");

  const std::string exported = dir_.File("out.xlsx");
  out = Sheetlog("export " + sheet + " --format xlsx -o " + exported, &status);
  ASSERT_EQ(status, 0) << out;
  std::string error;
  json theirs = OpenpyxlRead(exported, "", &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(theirs["B2"]["value"], "city");
  EXPECT_EQ(theirs["C3"]["value"], 421878);

  const std::string csv = dir_.File("out.csv");
  out = Sheetlog("export " + sheet + " --format csv -o " + csv, &status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(ReadFileBytes(csv).substr(0, 15), ",,,\r\n,city,popu");

  // A file that does not parse: exit 1, the server's message, nothing written.
  const std::string bad = dir_.File("bad.csv");
  WriteFileBytes(bad, "\"open\n");
  const int64_t before = NextSeq(sheet);
  out = Sheetlog("import " + bad + " --sheet " + sheet + " --mode merge", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("unterminated quoted field"), std::string::npos) << out;
  EXPECT_EQ(NextSeq(sheet), before);
}

// The export bound (README, "GET .../export"), which needs no spreadsheet tool.
class ExportBoundHttpTest : public ApiTest {
 protected:
  void SetUp() override { StartServer(ServerOptions(dir_.File("data"))); }

  JsonResponse UsedRange(const std::string& sheet) {
    return Get(*client_, "/v1/sheets/" + sheet + "/used-range");
  }
  JsonResponse Export(const std::string& sheet, const std::string& format) {
    return Get(*client_, "/v1/sheets/" + sheet + "/export?format=" + format);
  }
};

// User finding 4: one legal cell far out (XFD2147483647) made used-range walk the grid
// (seconds of CPU), XLSX export the same before refusing, and CSV export stream 2^31
// rows of commas. The used range is answered from the cells; an export past the bound
// is a 422 ExportTooLarge before anything is sent.
TEST_F(ExportBoundHttpTest, FarCellHasItsUsedRangeAndItsExportsAreRefusedBeforeSending) {
  const std::string sheet = CreateSheet(*client_);
  Append(*client_, sheet, "SetCell", {{"ref", "B2"}, {"value", 1}});
  Append(*client_, sheet, "SetCell", {{"ref", "XFD2147483647"}, {"value", "far"}});
  // From the entries, then from a snapshot holding them.
  for (int pass = 0; pass < 2; ++pass) {
    SCOPED_TRACE(pass == 0 ? "from the entries" : "from a snapshot");
    if (pass == 1) {
      const int64_t snapshot = TakeSnapshot(*client_, sheet);
      ASSERT_TRUE(WaitForSnapshot(*server_, *client_, sheet, snapshot));
    }
    JsonResponse used = UsedRange(sheet);
    ASSERT_EQ(used.status, 200) << used.raw;
    EXPECT_EQ(used.body["range"], "A1:XFD2147483647");
    EXPECT_EQ(used.body["last_row"], 2147483647);
    EXPECT_EQ(used.body["last_column"], 16384);
    for (const char* format : {"csv", "xlsx"}) {
      JsonResponse r = Export(sheet, format);
      EXPECT_EQ(r.status, 422) << format << ": " << r.raw.substr(0, 300);
      EXPECT_EQ(r.body["error"]["code"], "ExportTooLarge") << format;
      EXPECT_EQ(r.body["error"]["used_range"], "A1:XFD2147483647") << format;
      EXPECT_EQ(r.body["error"]["limit"], 100000000) << format;
      EXPECT_FALSE(r.body["error"]["message"].get<std::string>().empty());
      EXPECT_EQ(r.headers.count("Content-Disposition"), 0u) << format;
    }
  }

  // Cleared, the far cell no longer counts: B2 is the last cell again.
  SetCell(*client_, sheet, "XFD2147483647", nullptr);
  JsonResponse used = UsedRange(sheet);
  EXPECT_EQ(used.body["range"], "A1:B2") << used.raw;
  httplib::Result csv = client_->Get("/v1/sheets/" + sheet + "/export?format=csv");
  ASSERT_TRUE(csv);
  EXPECT_EQ(csv->status, 200);
  EXPECT_EQ(csv->body, ",\r\n,1\r\n");

  // Within the CSV bound but past XLSX's 1048576 rows: CSV may, XLSX may not.
  SetCell(*client_, sheet, "A1048577", 2);
  used = UsedRange(sheet);
  EXPECT_EQ(used.body["range"], "A1:B1048577") << used.raw;
  JsonResponse xlsx = Export(sheet, "xlsx");
  EXPECT_EQ(xlsx.status, 422) << xlsx.raw;
  EXPECT_EQ(xlsx.body["error"]["code"], "ExportTooLarge");
  EXPECT_EQ(xlsx.body["error"]["max_rows"], 1048576);
  EXPECT_EQ(xlsx.body["error"]["max_columns"], 16384);
}

}  // namespace
}  // namespace sheetlog::testing
