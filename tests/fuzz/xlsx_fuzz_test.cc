// Fuzzes the XLSX import reader (src/sheet/xlsx.h): libzip over the package, expat over
// its XML parts. Two kinds of mutants of the corpus (small files written by openpyxl,
// and one written by hand with shared strings, rich text, inline strings, errors and
// shared formulas): mutated zip bytes, and packages re-zipped with one XML part mutated
// (which reaches the XML handling past the zip's checksums). Whatever the input: no
// crash, OK or InvalidArgument, cells inside XLSX's grid, strings valid UTF-8.
#include <gtest/gtest.h>
#include <zip.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "src/sheet/csv.h"
#include "src/sheet/xlsx.h"
#include "tests/support/fuzz_inputs.h"

namespace sheetlog::testing {
namespace {

// Errors name the part or cell and quote what they found, whole: a part name from a
// deflated .rels part ("the package has no part '...'") can be longer than the file, so
// the bound is absolute; the corpus' mutants stay far below it unless a message grows
// with the inflated data without limit.
constexpr size_t kMaxXlsxMessageBytes = 64 << 10;

using Parts = std::vector<std::pair<std::string, std::string>>;  // name -> bytes

// The parts of a zip held in memory, in directory order; empty if it does not open.
Parts Unzip(const std::string& bytes) {
  Parts parts;
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (source == nullptr) return parts;
  zip_t* archive = zip_open_from_source(source, ZIP_RDONLY, &error);
  if (archive == nullptr) {
    zip_source_free(source);
    return parts;
  }
  const zip_int64_t count = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t stat;
    if (zip_stat_index(archive, i, 0, &stat) != 0) continue;
    zip_file_t* file = zip_fopen_index(archive, i, 0);
    if (file == nullptr) continue;
    std::string content(stat.size, '\0');
    const zip_int64_t read = zip_fread(file, content.data(), content.size());
    zip_fclose(file);
    if (read >= 0) content.resize(static_cast<size_t>(read));
    parts.emplace_back(stat.name, std::move(content));
  }
  zip_discard(archive);
  return parts;
}

std::string Zip(const Parts& parts) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* out = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_t* archive = zip_open_from_source(out, ZIP_TRUNCATE, &error);
  EXPECT_NE(archive, nullptr);
  if (archive == nullptr) return "";
  zip_source_keep(out);
  for (const auto& [name, content] : parts) {
    zip_source_t* part = zip_source_buffer(archive, content.data(), content.size(), 0);
    zip_file_add(archive, name.c_str(), part, ZIP_FL_OVERWRITE | ZIP_FL_ENC_UTF_8);
  }
  EXPECT_EQ(zip_close(archive), 0);
  std::string bytes;
  zip_stat_t stat;
  if (zip_source_stat(out, &stat) == 0 && zip_source_open(out) == 0) {
    bytes.resize(stat.size);
    const zip_int64_t read = zip_source_read(out, bytes.data(), bytes.size());
    bytes.resize(read < 0 ? 0 : static_cast<size_t>(read));
    zip_source_close(out);
  }
  zip_source_free(out);
  return bytes;
}

void CheckXlsx(const std::string& bytes) {
  StringPayloadSource source(bytes);
  ImportLimits limits;
  limits.max_xml_part_bytes = 64 << 20;
  limits.max_shared_string_bytes = 16 << 20;
  int64_t cells = 0;
  const Status status = ReadXlsx(source, "", limits, [&](const CellRef& ref, Cell cell) {
    ++cells;
    EXPECT_TRUE(ref.row >= 1 && ref.row <= kXlsxMaxRows && ref.col >= 1 &&
                ref.col <= kXlsxMaxColumns)
        << ref.row << "," << ref.col;
    if (cell.value.is_string()) {
      EXPECT_TRUE(IsValidUtf8(cell.value.string()));
    }
    if (cell.cached.get().is_string()) {
      EXPECT_TRUE(IsValidUtf8(cell.cached.get().string()));
    }
    return Status::OK();
  });
  if (!status.ok()) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    EXPECT_FALSE(status.message().empty());
    EXPECT_LE(status.message().size(), kMaxXlsxMessageBytes)
        << status.message().substr(0, 300);
  }
  EXPECT_LE(cells, static_cast<int64_t>(bytes.size()) * 64 + 64) << "cells from nothing";
}

FuzzDictionary XmlDictionary() {
  FuzzDictionary d;
  d.tokens = {"<c r=\"A1\">",
              "<c r=\"XFD1048576\" t=\"s\">",
              "<c r=\"XFE1\">",
              "<c r=\"A1048577\">",
              "</c>",
              "<v>",
              "</v>",
              "<v>4294967296</v>",
              "<v>-1</v>",
              "<f t=\"shared\" si=\"0\"/>",
              "<f t=\"shared\" ref=\"A1:XFD1048576\" si=\"0\">A1</f>",
              "<row r=\"0\">",
              "<row>",
              "</row>",
              "t=\"s\"",
              "t=\"b\"",
              "t=\"e\"",
              "t=\"inlineStr\"",
              "<is><t>x</t></is>",
              "s=\"99999\"",
              "<si><t>",
              "</t></si>",
              "<!DOCTYPE x [<!ENTITY a \"b\">]>",
              "&amp;",
              "&#0;",
              "&#x110000;",
              "<![CDATA[x]]>",
              "xmlns=\"\"",
              "<sheet name=\"Data\" sheetId=\"1\" r:id=\"rId9\"/>",
              "<numFmt numFmtId=\"164\" formatCode=\"\"/>"};
  d.nest_open = "<a>";
  d.nest_close = "</a>";
  return d;
}

TEST(XlsxFuzzTest, CorpusAndMutatedZipBytes) {
  const int64_t ran =
      FuzzCorpus("xlsx", FuzzMutations(150), 0x715C, XmlDictionary(), CheckXlsx);
  EXPECT_GT(ran, 150);
}

TEST(XlsxFuzzTest, MutatedXmlPartsRezipped) {
  const std::vector<FuzzInput> corpus = LoadFuzzCorpus("xlsx");
  ASSERT_FALSE(corpus.empty());
  FuzzMutator mutator(0x7157, XmlDictionary());
  const int mutations = FuzzMutations(150);
  int64_t ran = 0;
  for (const FuzzInput& input : corpus) {
    const Parts parts = Unzip(input.bytes);
    ASSERT_FALSE(parts.empty()) << input.name << " does not unzip";
    // The parts the reader looks at.
    std::vector<size_t> xml;
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string& name = parts[i].first;
      if (name.rfind("xl/", 0) == 0 && name.find("theme") == std::string::npos) {
        xml.push_back(i);
      }
    }
    ASSERT_FALSE(xml.empty()) << input.name;
    for (int m = 0; m < mutations; ++m) {
      Parts mutant = parts;
      auto& [name, content] = mutant[xml[mutator.Below(xml.size())]];
      std::string how = input.name + " part " + name;
      content =
          mutator.Mutate(content, parts[xml[mutator.Below(xml.size())]].second, &how);
      const std::string bytes = Zip(mutant);
      SCOPED_TRACE(how + " (mutant " + std::to_string(m) + ")");
      ASSERT_NO_FATAL_FAILURE(CheckXlsx(bytes));
      ++ran;
      if (HasFailure()) {
        const std::string path = "/tmp/sheetlog-fuzz-xlsx-part-failure.xlsx";
        std::ofstream(path, std::ios::binary) << bytes;
        FAIL() << "the failing file is in " << path;
      }
    }
  }
  EXPECT_EQ(ran, static_cast<int64_t>(corpus.size()) * mutations);
}

}  // namespace
}  // namespace sheetlog::testing
