// Test helpers: files made by real spreadsheet tools (openpyxl, Gnumeric's
// ssconvert), read back by the same tools, and hand-made zip packages for the bad-file
// cases. Each helper runs the tool as a child process and reports its failure in the
// returned error text.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace sheetlog::testing {

// True if `program` is on PATH.
bool HaveProgram(const std::string& program);
// True if python3 can import openpyxl.
bool HaveOpenpyxl();

// Runs a shell command; returns its exit status and fills *output with stdout+stderr.
int RunShell(const std::string& command, std::string* output);

std::string ReadFileBytes(const std::string& path);
void WriteFileBytes(const std::string& path, const std::string& bytes);

// Writes an XLSX with openpyxl. `cells` maps "B2" -> {"value": v, "format"?: code}
// (a string value starting with '=' is written as a formula; {"date": "2024-01-15"}
// as a value writes a date). `sheet` names the worksheet; `extra_sheets` adds sheets
// before it. Returns "" or the error.
std::string OpenpyxlWrite(const std::string& path, const nlohmann::json& cells,
                          const std::string& sheet = "Sheet1",
                          const nlohmann::json& extra_sheets = nlohmann::json::object());

// The cells openpyxl reads from `path` (worksheet `sheet`, "" = the active one) as
// {"B2": {"value": v, "format": code}}: dates back to Excel serial numbers, formulas as
// their text with '=', General as "". Sets *error on failure.
nlohmann::json OpenpyxlRead(const std::string& path, const std::string& sheet,
                            std::string* error);

// ssconvert `from` `to` (the format from the names). Returns "" or the error.
std::string Ssconvert(const std::string& from, const std::string& to);

// LibreOffice: `soffice --headless --convert-to <filter> --outdir <out_dir> <from>`,
// with a profile of its own under out_dir (so parallel tests do not share one).
// Returns "" or the error; the result is out_dir/<from's stem>.<filter's extension>.
std::string LibreOfficeConvert(const std::string& from, const std::string& filter,
                               const std::string& out_dir);
// The cells LibreOffice reads from a spreadsheet file, as {"B2": {"value": v}}: it
// writes them as CSV of raw values with formulas as text (filter options
// 44,34,76,1,,1033,false,false,false,true), read here field by field: "=..." stays a
// formula's text, numbers become numbers ("50%" is 0.5, as LibreOffice writes a
// percentage even raw), anything else a string. Sets *error on failure.
nlohmann::json LibreOfficeRead(const std::string& path, std::string* error);
// A zip written by Python's zipfile: {"name": "content", ...}. Returns "" or the error.
std::string PythonZip(const std::string& path, const nlohmann::json& parts);

// Sets the uncompressed size that the zip's central directory claims for `part` (a
// lie, for the size-claim cases). False if the zip has no such part.
bool SetZipSizeClaim(std::string* zip, const std::string& part, uint32_t claim);

// The minimal XLSX package parts around one worksheet XML body (workbook, rels,
// content types), for hand-made cases.
nlohmann::json MinimalXlsxParts(const std::string& sheet_xml,
                                const std::string& shared_strings_xml = "");

}  // namespace sheetlog::testing
