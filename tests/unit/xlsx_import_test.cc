// XLSX input (src/sheet/xlsx.h) on files made by openpyxl and Gnumeric's ssconvert,
// compared with what openpyxl reads back from the same file; and the files that must
// be refused (damaged zips, XML bombs, size claims).
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "src/sheet/import_file.h"
#include "src/sheet/xlsx.h"
#include "src/sheet/xlsx_package.h"
#include "tests/support/spreadsheet_tools.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class XlsxImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveOpenpyxl()) GTEST_SKIP() << "python3-openpyxl is not installed";
  }

  // {"B2": {"value": v, "format": code}} of our reader, the shape OpenpyxlRead gives.
  static json OurCells(const std::string& path, const std::string& worksheet,
                       Status* status, const ImportLimits& limits = {}) {
    std::string bytes = ReadFileBytes(path);
    StringPayloadSource source(bytes);
    json out = json::object();
    *status = ReadXlsx(source, worksheet, limits, [&](const CellRef& ref, Cell cell) {
      out[FormatCellRef(ref)] = {{"value", cell.value.ToJson()}, {"format", cell.format}};
      if (!cell.cached.is_null())
        out[FormatCellRef(ref)]["cached"] = cell.cached.get().ToJson();
      return Status::OK();
    });
    return out;
  }

  static Status Refusal(const std::string& path) {
    Status status;
    OurCells(path, "", &status);
    return status;
  }

  // Reads `path` with openpyxl and with ReadXlsx (the first worksheet) and expects the
  // same cells; *ours gets ours.
  static void ExpectReadsLikeOpenpyxl(const std::string& path, json* ours) {
    std::string error;
    json theirs = OpenpyxlRead(path, "", &error);
    ASSERT_EQ(error, "");
    Status status;
    *ours = OurCells(path, "", &status);
    ASSERT_OK(status);
    ExpectSameCells(*ours, theirs);
  }

  // Numbers compare by value (openpyxl gives 2 for 2.0).
  static void ExpectSameCells(const json& ours, const json& theirs) {
    ASSERT_EQ(ours.size(), theirs.size())
        << "ours " << ours.dump() << "\ntheirs " << theirs.dump();
    for (auto it = theirs.begin(); it != theirs.end(); ++it) {
      ASSERT_TRUE(ours.contains(it.key()))
          << it.key() << " missing; ours " << ours.dump();
      const json& a = ours[it.key()];
      const json& b = it.value();
      if (b["value"].is_number()) {
        EXPECT_DOUBLE_EQ(a["value"].get<double>(), b["value"].get<double>()) << it.key();
      } else {
        EXPECT_EQ(a["value"], b["value"]) << it.key();
      }
      EXPECT_EQ(a["format"], b["format"]) << it.key();
    }
  }

  // A minimal package around a worksheet holding `sheet_data` (the children of
  // <sheetData>), written to dir_/name. With `claim`, the worksheet's entry in the zip
  // directory claims that many bytes uncompressed, whatever it really holds.
  std::string WritePackage(const std::string& name, const std::string& sheet_data,
                           std::optional<uint32_t> claim = std::nullopt) {
    const std::string path = dir_.File(name);
    EXPECT_EQ(PythonZip(path, MinimalXlsxParts(
                                  "<worksheet xmlns=\"http://schemas.openxmlformats.org/"
                                  "spreadsheetml/2006/main\"><sheetData>" +
                                  sheet_data + "</sheetData></worksheet>")),
              "");
    if (claim) {
      std::string bytes = ReadFileBytes(path);
      EXPECT_TRUE(SetZipSizeClaim(&bytes, "xl/worksheets/sheet1.xml", *claim));
      WriteFileBytes(path, bytes);
    }
    return path;
  }

  TempDir dir_;
};

json SampleCells() {
  return json{{"A1", {{"value", "name"}}},
              {"B1", {{"value", "amount"}}},
              {"C1", {{"value", "paid"}}},
              {"A2", {{"value", "Zo\u00eb, \"the\" first"}}},
              {"B2", {{"value", 1234.5}}},
              {"C2", {{"value", true}}},
              {"A3", {{"value", "multi\nline"}}},
              {"B3", {{"value", -7}}},
              {"C3", {{"value", false}}},
              {"B4", {{"value", "=SUM(B2:B3)"}}},
              {"D2", {{"value", 0.125}, {"format", "0.00%"}}},
              {"D3", {{"value", {{"date", "2024-01-15"}}}, {"format", "yyyy-mm-dd"}}},
              {"E5", {{"value", "007"}}},
              {"F6", {{"value", 1e-300}}}};
}

TEST_F(XlsxImportTest, OpenpyxlFileGivesTheCellsOpenpyxlReads) {
  const std::string path = dir_.File("openpyxl.xlsx");
  ASSERT_EQ(OpenpyxlWrite(path, SampleCells()), "");
  json ours;
  ASSERT_NO_FATAL_FAILURE(ExpectReadsLikeOpenpyxl(path, &ours));
  EXPECT_EQ(ours["B4"]["value"], "=SUM(B2:B3)");
  EXPECT_EQ(ours["D3"]["value"], 45306);  // 2024-01-15 as Excel's day serial
}

TEST_F(XlsxImportTest, GnumericFileGivesTheCellsOpenpyxlReads) {
  if (!HaveProgram("ssconvert")) GTEST_SKIP() << "gnumeric (ssconvert) is not installed";
  const std::string csv = dir_.File("in.csv");
  WriteFileBytes(csv,
                 "item,qty,price,ok\r\nbolt,12,0.25,TRUE\r\n\"nut, hex\",3,1.5,FALSE\r\n"
                 "washer,,2e3,\r\n,=B2*C2,x,y\r\n");
  const std::string path = dir_.File("gnumeric.xlsx");
  ASSERT_EQ(Ssconvert(csv, path), "");
  json ours;
  ASSERT_NO_FATAL_FAILURE(ExpectReadsLikeOpenpyxl(path, &ours));
  EXPECT_EQ(ours["A3"]["value"], "nut, hex");
  EXPECT_EQ(ours["B2"]["value"], 12);
}

TEST_F(XlsxImportTest, NamedWorksheetIsRead) {
  const std::string path = dir_.File("two.xlsx");
  ASSERT_EQ(OpenpyxlWrite(path, json{{"A1", {{"value", "second"}}}}, "Wanted",
                          json{{"First", json{{"A1", {{"value", "first"}}}}}}),
            "");
  Status status;
  EXPECT_EQ(OurCells(path, "", &status)["A1"]["value"], "first");
  EXPECT_EQ(OurCells(path, "Wanted", &status)["A1"]["value"], "second");
  OurCells(path, "Missing", &status);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("no worksheet named 'Missing'"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("'Wanted'"), std::string::npos) << status.message();
}

TEST_F(XlsxImportTest, SharedInlineErrorAndSharedFormulaCells) {
  const std::string sheet = R"(<?xml version="1.0"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>
<row r="1"><c r="A1" t="s"><v>1</v></c><c r="B1" t="inlineStr"><is><r><t>in</t></r><r><t>line</t></r></is></c>
<c r="C1" t="e"><v>#DIV/0!</v></c><c r="D1" t="b"><v>1</v></c></row>
<row r="2"><c r="A2"><v>1</v></c><c r="B2"><f t="shared" ref="B2:B4" si="0">A2*2+$A$1</f><v>2</v></c></row>
<row r="3"><c r="A3"><v>2</v></c><c r="B3"><f t="shared" si="0"/><v>4</v></c></row>
<row><c><v>3</v></c><c><f t="shared" si="0"/><v>6</v></c></row>
</sheetData></worksheet>)";
  const std::string strings = R"(<?xml version="1.0"?>
<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>zero</t></si>
<si><r><t>ri</t></r><r><t>ch</t></r><rPh><t>phonetic</t></rPh></si></sst>)";
  const std::string path = dir_.File("hand.xlsx");
  ASSERT_EQ(PythonZip(path, MinimalXlsxParts(sheet, strings)), "");
  Status status;
  json ours = OurCells(path, "", &status);
  ASSERT_OK(status);
  EXPECT_EQ(ours["A1"]["value"], "rich");
  EXPECT_EQ(ours["B1"]["value"], "inline");
  EXPECT_EQ(ours["C1"]["value"], "#DIV/0!");
  EXPECT_EQ(ours["D1"]["value"], true);
  EXPECT_EQ(ours["B2"]["value"], "=A2*2+$A$1");
  EXPECT_EQ(ours["B3"]["value"], "=A3*2+$A$1");
  EXPECT_EQ(ours["B4"]["value"], "=A4*2+$A$1");  // row and cells without r
  EXPECT_EQ(ours["B2"]["cached"], 2);            // each formula's <v>
  EXPECT_EQ(ours["B4"]["cached"], 6);
  EXPECT_FALSE(ours["A2"].contains("cached"));
  EXPECT_EQ(ours["A4"]["value"], 3);
}

// A hostile shared formula: the master's row number fits int64, moved one row down it
// does not. The moved reference is off the grid (#REF!), not a signed overflow.
TEST_F(XlsxImportTest, SharedFormulaMovedPastInt64IsRefError) {
  const std::string sheet = R"(<?xml version="1.0"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>
<row r="1"><c r="A1"><f t="shared" ref="A1:A2" si="0">B9223372036854775807+B1</f></c></row>
<row r="2"><c r="A2"><f t="shared" si="0"/></c></row>
</sheetData></worksheet>)";
  const std::string path = dir_.File("overflow.xlsx");
  ASSERT_EQ(PythonZip(path, MinimalXlsxParts(sheet)), "");
  Status status;
  json ours = OurCells(path, "", &status);
  ASSERT_OK(status);
  EXPECT_EQ(ours["A1"]["value"], "=B9223372036854775807+B1");
  EXPECT_EQ(ours["A2"]["value"], "=#REF!+B2");
}

TEST_F(XlsxImportTest, TruncatedZipIsRefused) {
  const std::string path = dir_.File("whole.xlsx");
  ASSERT_EQ(OpenpyxlWrite(path, SampleCells()), "");
  std::string bytes = ReadFileBytes(path);
  WriteFileBytes(path, bytes.substr(0, bytes.size() / 2));
  Status status = Refusal(path);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("truncated or not a zip"), std::string::npos)
      << status.message();
}

TEST_F(XlsxImportTest, NotAZipIsRefused) {
  const std::string path = dir_.File("text.xlsx");
  WriteFileBytes(path, "a,b\n1,2\n");
  EXPECT_EQ(Refusal(path).code(), StatusCode::kInvalidArgument);
}

TEST_F(XlsxImportTest, XmlEntityBombIsRefused) {
  std::string sheet = R"(<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">)";
  sheet += R"(<!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">)";
  for (int i = 2; i <= 9; ++i) {
    std::string prev = "&lol" + std::to_string(i - 1) + ";";
    std::string body;
    for (int k = 0; k < 10; ++k) body += prev;
    sheet += "<!ENTITY lol" + std::to_string(i) + " \"" + body + "\">";
  }
  sheet +=
      "]><worksheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\">"
      "<sheetData><row r=\"1\"><c r=\"A1\" t=\"inlineStr\"><is><t>&lol9;</t></is></c>"
      "</row></sheetData></worksheet>";
  const std::string path = dir_.File("bomb.xlsx");
  ASSERT_EQ(PythonZip(path, MinimalXlsxParts(sheet)), "");
  Status status = Refusal(path);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("DOCTYPE"), std::string::npos) << status.message();
}

TEST_F(XlsxImportTest, TwoGigabyteSizeClaimIsRefusedBeforeInflating) {
  Status status = Refusal(WritePackage("claim.xlsx", "", 0x80000000u));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("claims 2147483648 bytes"), std::string::npos)
      << status.message();
}

TEST_F(XlsxImportTest, PartInflatingPastItsClaimIsRefused) {
  Status status = Refusal(WritePackage("liar.xlsx", std::string(1 << 20, ' '), 1000));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("xl/worksheets/sheet1.xml"), std::string::npos)
      << status.message();
}

TEST_F(XlsxImportTest, PartInflatingPastTheLimitIsRefused) {
  // A zip bomb in miniature: a worksheet that inflates far beyond its compressed size.
  const std::string path = WritePackage("inflate.xlsx", std::string(1 << 20, ' '));
  ImportLimits limits;
  limits.max_xml_part_bytes = 64 * 1024;
  Status status;
  OurCells(path, "", &status, limits);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("more than the limit"), std::string::npos)
      << status.message();
}

TEST_F(XlsxImportTest, BadCellContentNamesTheCell) {
  Status status = Refusal(
      WritePackage("badnumber.xlsx", "<row r=\"7\"><c r=\"B7\"><v>12abc</v></c></row>"));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("XLSX sheet 'Data' cell B7: bad number '12abc'"),
            std::string::npos)
      << status.message();
}

TEST_F(XlsxImportTest, ImportCapsCellsAndChecksTheGridAtTheAnchor) {
  const std::string path = dir_.File("cap.xlsx");
  ASSERT_EQ(OpenpyxlWrite(path, SampleCells()), "");
  std::string bytes = ReadFileBytes(path);
  StringPayloadSource source(bytes);
  ImportEdit edit;
  edit.format = ImportEdit::Format::kXlsx;
  ImportLimits limits;
  limits.max_cells = 3;
  Result<ImportedCells> capped = ReadImportedCells(edit, source, limits);
  EXPECT_EQ(capped.status().code(), StatusCode::kInvalidArgument);
  edit.at = CellRef{kMaxRow, 1};
  Result<ImportedCells> off_grid = ReadImportedCells(edit, source);
  EXPECT_EQ(off_grid.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(off_grid.status().message().find("past the grid"), std::string::npos);
  edit.at = CellRef{1, 1};
  Result<ImportedCells> cells = ReadImportedCells(edit, source);
  ASSERT_OK(cells);
  EXPECT_EQ(cells->size(), SampleCells().size());
  EXPECT_TRUE(std::is_sorted(
      cells->begin(), cells->end(),
      [](const PlacedCell& a, const PlacedCell& b) { return a.ref < b.ref; }));
}

TEST_F(XlsxImportTest, WrittenFileReadsBackInOpenpyxlAndHere) {
  const std::string path = dir_.File("written.xlsx");
  auto writer = XlsxFileWriter::Create(path);
  ASSERT_OK(writer);
  std::vector<PlacedCell> cells = {
      {{1, 1}, {CellValue::String("text, \"quoted\""), ""}},
      {{1, 2}, {CellValue::Number(2.5), ""}},
      {{1, 3}, {CellValue::Boolean(true), ""}},
      {{2, 1}, {CellValue::Number(45306), "yyyy-mm-dd"}},
      {{2, 3}, {CellValue::String("=B1*2"), ""}},
      {{2, 4}, {CellValue::String("=B1*4"), "", CellValue::Number(10)}},
      {{2, 5}, {CellValue::String("=A1"), "", CellValue::String("cached text")}},
      {{3, 28}, {CellValue::Number(0.25), "0.00%"}}};
  for (const PlacedCell& c : cells) ASSERT_OK((*writer)->Write(c.ref, c.cell));
  ASSERT_OK((*writer)->Close());
  json ours;
  ASSERT_NO_FATAL_FAILURE(ExpectReadsLikeOpenpyxl(path, &ours));
  // (openpyxl read the same: the helper compared every cell.)
  EXPECT_EQ(ours["A1"]["value"], "text, \"quoted\"");
  EXPECT_EQ(ours["C2"]["value"], "=B1*2");
  EXPECT_EQ(ours["AB3"]["format"], "0.00%");
  EXPECT_EQ(ours["A2"]["format"], "yyyy-mm-dd");
  // Cached results are written: openpyxl's data_only read (which gives <v>) sees them.
  EXPECT_EQ(ours["D2"]["cached"], 10);
  EXPECT_EQ(ours["E2"]["cached"], "cached text");
  std::string output;
  ASSERT_EQ(RunShell("/usr/bin/python3 -c \"import openpyxl, sys; ws = "
                     "openpyxl.load_workbook(sys.argv[1], data_only=True).active; "
                     "print(ws['D2'].value, ws['E2'].value)\" " +
                         path,
                     &output),
            0)
      << output;
  EXPECT_EQ(output, "10 cached text\n");
}

TEST_F(XlsxImportTest, WriterRefusesCellsOutsideXlsxGrid) {
  auto writer = XlsxFileWriter::Create(dir_.File("big.xlsx"));
  ASSERT_OK(writer);
  Status status = (*writer)->Write({kXlsxMaxRows + 1, 1}, {CellValue::Number(1), ""});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_OK((*writer)->Close());
}

// The inflated worksheet part of the XLSX file at `path` (XlsxFileWriter's one sheet).
std::string WrittenSheetXml(const std::string& path) {
  const std::string bytes = ReadFileBytes(path);
  StringPayloadSource source(bytes);
  xlsx_package::ZipPackage zip;
  std::string xml;
  Status read = zip.Open(source);
  if (read.ok()) {
    read = zip.Stream("xl/worksheets/sheet1.xml", int64_t{1} << 30,
                      [&](std::string_view chunk) {
                        xml.append(chunk);
                        return Status::OK();
                      });
  }
  EXPECT_OK(read);
  return xml;
}

// The <c> element of cell `ref` in worksheet XML, or "" if there is none.
std::string CellElement(const std::string& xml, const std::string& ref) {
  const size_t at = xml.find("<c r=\"" + ref + "\"");
  if (at == std::string::npos) return "";
  const size_t open_end = xml.find('>', at);
  if (open_end == std::string::npos) return "";
  if (xml[open_end - 1] == '/') return xml.substr(at, open_end + 1 - at);
  const size_t end = xml.find("</c>", at);
  return end == std::string::npos ? "" : xml.substr(at, end + 4 - at);
}

// User finding 3: libxlsxwriter writes <v>0</v> for a formula it is given no result
// for, and LibreOffice shows that 0. A formula without a known result has no <v>; one
// with a known result (0 included) keeps it. Needs no spreadsheet tool: the XML is
// read straight from the package.
TEST(XlsxWriterTest, FormulaWithoutACachedResultIsWrittenWithoutAValue) {
  TempDir dir;
  const std::string path = dir.File("formulas.xlsx");
  auto writer = XlsxFileWriter::Create(path);
  ASSERT_OK(writer);
  // Row 1 written out of column order: the worksheet lists a row by column.
  const std::vector<PlacedCell> row1 = {
      {{1, 3}, {CellValue::String("=A1*0"), "", CellValue::Number(0)}},
      {{1, 1}, {CellValue::Number(2), ""}},
      {{1, 2}, {CellValue::String("=A1*2"), ""}},
      {{1, 4}, {CellValue::String("=A1&\"</f><v>\""), "0.00"}},
      {{1, 5}, {CellValue::String("=\"x\""), "", CellValue::String("x")}},
      {{1, 6}, {CellValue::String("=A1>1"), "", CellValue::Boolean(true)}}};
  for (const PlacedCell& c : row1) ASSERT_OK((*writer)->Write(c.ref, c.cell));
  // Enough formulas that the worksheet part spans many reads, alternating a known and
  // an unknown result.
  constexpr int kRows = 3000;
  for (int64_t row = 2; row <= kRows; ++row) {
    for (int64_t col = 1; col <= 2; ++col) {
      Cell cell{CellValue::String("=ROW()*" + std::to_string(col)), ""};
      if ((row + col) % 2 == 0) cell.cached = CellValue::Number(row * col);
      ASSERT_OK((*writer)->Write({row, col}, cell));
    }
  }
  ASSERT_OK((*writer)->Close());

  const std::string xml = WrittenSheetXml(path);
  const std::string b1 = CellElement(xml, "B1");
  EXPECT_NE(b1.find("<f>A1*2</f>"), std::string::npos) << b1;
  EXPECT_EQ(b1.find("<v>"), std::string::npos) << b1;
  EXPECT_EQ(CellElement(xml, "C1"), "<c r=\"C1\"><f>A1*0</f><v>0</v></c>");
  const std::string d1 = CellElement(xml, "D1");
  EXPECT_NE(d1.find("<f>"), std::string::npos) << d1;
  EXPECT_EQ(d1.find("<v>"), std::string::npos) << d1;
  EXPECT_NE(CellElement(xml, "E1").find("<v>x</v>"), std::string::npos);
  // A boolean result libxlsxwriter cannot write: none rather than a wrong one.
  EXPECT_EQ(CellElement(xml, "F1").find("<v>"), std::string::npos);

  // Read back: every formula kept, with exactly the results that were known.
  std::map<std::string, Cell> read;
  std::string bytes = ReadFileBytes(path);
  StringPayloadSource source(bytes);
  ASSERT_OK(ReadXlsx(source, "", {}, [&](const CellRef& ref, Cell cell) {
    read[FormatCellRef(ref)] = std::move(cell);
    return Status::OK();
  }));
  ASSERT_EQ(read.size(), row1.size() + 2 * (kRows - 1));
  EXPECT_TRUE(read["B1"].cached.is_null());
  EXPECT_EQ(read["C1"].cached.get(), CellValue::Number(0));
  EXPECT_EQ(read["D1"].value, CellValue::String("=A1&\"</f><v>\""));
  EXPECT_EQ(read["D1"].format, "0.00");
  EXPECT_TRUE(read["D1"].cached.is_null());
  EXPECT_EQ(read["E1"].cached.get(), CellValue::String("x"));
  for (int64_t row = 2; row <= kRows; ++row) {
    for (int64_t col = 1; col <= 2; ++col) {
      const Cell& cell = read[FormatCellRef({row, col})];
      EXPECT_EQ(cell.value, CellValue::String("=ROW()*" + std::to_string(col)));
      if ((row + col) % 2 == 0) {
        EXPECT_EQ(cell.cached.get(), CellValue::Number(row * col)) << row << "," << col;
      } else {
        EXPECT_TRUE(cell.cached.is_null()) << row << "," << col;
      }
    }
  }
}

}  // namespace
}  // namespace sheetlog::testing
