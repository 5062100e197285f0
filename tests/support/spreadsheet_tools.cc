#include "tests/support/spreadsheet_tools.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "emulator/json_text.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {

namespace {

std::string Quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

// Debian's python3 (where python3-openpyxl installs), even when another python3 comes
// first on PATH (pyenv).
std::string Python() {
  return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

// Runs a Python program with `argument` as its one argument.
std::string RunPython(const std::string& program, const std::string& argument,
                      std::string* output) {
  TempDir dir;
  WriteFileBytes(dir.File("program.py"), program);
  std::string out;
  int status = RunShell(
      Python() + " " + Quote(dir.File("program.py")) + " " + Quote(argument), &out);
  if (output != nullptr) *output = out;
  return status == 0 ? "" : "python3 failed (" + std::to_string(status) + "): " + out;
}

constexpr const char* kWriteProgram = R"(
import datetime, json, sys
import openpyxl
spec = json.load(open(sys.argv[1]))
book = openpyxl.Workbook()
book.remove(book.active)
for name, cells in list(spec["extra"].items()) + [(spec["sheet"], spec["cells"])]:
    ws = book.create_sheet(name)
    for ref, cell in cells.items():
        value = cell["value"]
        if isinstance(value, dict) and "date" in value:
            value = datetime.datetime.strptime(value["date"], "%Y-%m-%d")
        ws[ref] = value
        if "format" in cell:
            ws[ref].number_format = cell["format"]
book.save(spec["path"])
)";

constexpr const char* kReadProgram = R"(
import datetime, json, sys, warnings
warnings.simplefilter("ignore")  # stdout must hold only the JSON
import openpyxl
from openpyxl.utils.datetime import to_excel
args = json.load(open(sys.argv[1]))
book = openpyxl.load_workbook(args["path"])
ws = book[args["sheet"]] if args["sheet"] else book.worksheets[0]
out = {}
for row in ws.iter_rows():
    for cell in row:
        value = cell.value
        if value is None:
            continue
        if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
            value = to_excel(value)
        fmt = cell.number_format
        out[cell.coordinate] = {"value": value, "format": "" if fmt == "General" else fmt}
print(json.dumps(out))
)";

constexpr const char* kZipProgram = R"(
import json, sys, zipfile
spec = json.load(open(sys.argv[1]))
with zipfile.ZipFile(spec["path"], "w", zipfile.ZIP_DEFLATED) as z:
    for name, content in spec["parts"].items():
        z.writestr(name, content)
)";

}  // namespace

int RunShell(const std::string& command, std::string* output) {
  std::FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::string out;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  if (output != nullptr) *output = out;
  return status;
}

bool HaveProgram(const std::string& program) {
  return RunShell("command -v " + Quote(program), nullptr) == 0;
}

bool HaveOpenpyxl() { return RunShell(Python() + " -c 'import openpyxl'", nullptr) == 0; }

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string OpenpyxlWrite(const std::string& path, const nlohmann::json& cells,
                          const std::string& sheet, const nlohmann::json& extra_sheets) {
  TempDir dir;
  WriteFileBytes(
      dir.File("spec.json"),
      nlohmann::json{
          {"path", path}, {"cells", cells}, {"sheet", sheet}, {"extra", extra_sheets}}
          .dump());
  return RunPython(kWriteProgram, dir.File("spec.json"), nullptr);
}

nlohmann::json OpenpyxlRead(const std::string& path, const std::string& sheet,
                            std::string* error) {
  TempDir dir;
  WriteFileBytes(dir.File("args.json"),
                 nlohmann::json{{"path", path}, {"sheet", sheet}}.dump());
  std::string output;
  *error = RunPython(kReadProgram, dir.File("args.json"), &output);
  if (!error->empty()) return nullptr;
  nlohmann::json parsed = ParseJsonOrDiscarded(output);
  if (parsed.is_discarded()) *error = "openpyxl printed no JSON: " + output;
  return parsed;
}

std::string Ssconvert(const std::string& from, const std::string& to) {
  std::string output;
  int status = RunShell("ssconvert " + Quote(from) + " " + Quote(to), &output);
  return status == 0 ? ""
                     : "ssconvert failed (" + std::to_string(status) + "): " + output;
}

std::string LibreOfficeConvert(const std::string& from, const std::string& filter,
                               const std::string& out_dir) {
  std::string output;
  int status = RunShell("soffice -env:UserInstallation=file://" + out_dir +
                            "/.lo-profile --headless --convert-to " + Quote(filter) +
                            " --outdir " + Quote(out_dir) + " " + Quote(from),
                        &output);
  return status == 0 ? "" : "soffice failed (" + std::to_string(status) + "): " + output;
}

constexpr const char* kLibreOfficeCsvProgram = R"PY(
import csv, json, re, sys
def name(row, col):
    letters = ""
    while col:
        col, rem = divmod(col - 1, 26)
        letters = chr(65 + rem) + letters
    return letters + str(row)
out = {}
with open(sys.argv[1], newline="", encoding="utf-8") as f:
    for r, fields in enumerate(csv.reader(f), start=1):
        for c, text in enumerate(fields, start=1):
            if text == "":
                continue
            value = text
            if not text.startswith("="):
                number = re.fullmatch(r"-?[0-9]+(\.[0-9]+)?(E[+-]?[0-9]+)?(%?)", text)
                if number:
                    value = float(text.rstrip("%")) / (100 if number.group(3) else 1)
                    if value == int(value) and abs(value) < 2**53:
                        value = int(value)
            out[name(r, c)] = {"value": value}
print(json.dumps(out))
)PY";

nlohmann::json LibreOfficeRead(const std::string& path, std::string* error) {
  TempDir dir;
  *error = LibreOfficeConvert(
      path, "csv:Text - txt - csv (StarCalc):44,34,76,1,,1033,false,false,false,true",
      dir.path());
  if (!error->empty()) return nullptr;
  std::string stem = path.substr(path.find_last_of('/') + 1);
  stem = stem.substr(0, stem.find_last_of('.'));
  std::string output;
  *error = RunPython(kLibreOfficeCsvProgram, dir.File(stem + ".csv"), &output);
  if (!error->empty()) return nullptr;
  nlohmann::json parsed = ParseJsonOrDiscarded(output);
  if (parsed.is_discarded()) *error = "the CSV reader printed no JSON: " + output;
  return parsed;
}

std::string PythonZip(const std::string& path, const nlohmann::json& parts) {
  TempDir dir;
  WriteFileBytes(dir.File("spec.json"),
                 nlohmann::json{{"path", path}, {"parts", parts}}.dump());
  return RunPython(kZipProgram, dir.File("spec.json"), nullptr);
}

bool SetZipSizeClaim(std::string* zip, const std::string& part, uint32_t claim) {
  // A central directory entry: signature PK\1\2, the uncompressed size at offset 24,
  // the name at offset 46.
  size_t entry = std::string::npos;
  for (size_t at = zip->find("PK\x01\x02"); at != std::string::npos;
       at = zip->find("PK\x01\x02", at + 4)) {
    if (zip->compare(at + 46, part.size(), part) == 0) entry = at;
  }
  if (entry == std::string::npos) return false;
  for (int i = 0; i < 4; ++i)
    (*zip)[entry + 24 + i] = static_cast<char>(claim >> (8 * i));
  return true;
}

nlohmann::json MinimalXlsxParts(const std::string& sheet_xml,
                                const std::string& shared_strings_xml) {
  const std::string main_ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
  const std::string rel_ns =
      "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
  nlohmann::json parts{
      {"[Content_Types].xml",
       R"(<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>)"},
      {"xl/workbook.xml", "<?xml version=\"1.0\"?><workbook xmlns=\"" + main_ns +
                              "\" xmlns:r=\"" + rel_ns +
                              "\"><sheets><sheet name=\"Data\" sheetId=\"1\" "
                              "r:id=\"rId1\"/></sheets></workbook>"},
      {"xl/_rels/workbook.xml.rels",
       "<?xml version=\"1.0\"?><Relationships "
       "xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">"
       "<Relationship Id=\"rId1\" Type=\"" +
           rel_ns + "/worksheet\" Target=\"worksheets/sheet1.xml\"/></Relationships>"},
      {"xl/worksheets/sheet1.xml", sheet_xml}};
  if (!shared_strings_xml.empty()) parts["xl/sharedStrings.xml"] = shared_strings_xml;
  return parts;
}

}  // namespace sheetlog::testing
