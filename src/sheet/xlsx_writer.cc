// XlsxFileWriter (xlsx.h): libxlsxwriter in constant_memory mode, one worksheet.
//
// libxlsxwriter writes every formula with a cached result (<v>), 0 when it is given
// none, and a reader that trusts cached results (LibreOffice by default) shows that 0.
// So the writer notes, per formula in the order the worksheet XML lists them, whether
// its result is unknown, and Close() rewrites the worksheet part without those <v>
// elements (only when there is one: one more pass over the part, streamed through a
// temporary file next to the workbook).
#include <xlsxwriter.h>
#include <zip.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/sheet/xlsx.h"

namespace sheetlog {

namespace {

// The worksheet part libxlsxwriter writes for the one worksheet.
constexpr char kSheetPart[] = "xl/worksheets/sheet1.xml";

// Streams a worksheet part written by libxlsxwriter, dropping the value of the i-th
// formula where strip[i]. libxlsxwriter writes a formula cell as
// <c r="A1"><f>text</f><v>result</v></c> with the text escaped, so "</f><v>" occurs
// once per formula and nowhere else, and the value ends at the next "</v>".
class FormulaValueFilter {
 public:
  explicit FormulaValueFilter(const std::vector<bool>& strip) : strip_(strip) {}

  // Appends to *out what is decided once `chunk` follows what came before.
  void Feed(std::string_view chunk, std::string* out) {
    held_.append(chunk);
    size_t pos = 0;
    while (true) {
      if (skipping_) {
        const size_t end = held_.find(kValueEnd, pos);
        if (end == std::string::npos) {
          // Drop what cannot hold the start of "</v>".
          pos = held_.size() - std::min(held_.size() - pos, kValueEnd.size() - 1);
          break;
        }
        pos = end + kValueEnd.size();
        skipping_ = false;
        continue;
      }
      const size_t at = held_.find(kFormulaEnd, pos);
      if (at == std::string::npos) {
        const size_t keep = std::min(held_.size() - pos, kFormulaEnd.size() - 1);
        out->append(held_, pos, held_.size() - keep - pos);
        pos = held_.size() - keep;
        break;
      }
      const size_t value = at + kFormulaEndTag.size();  // where "<v>" starts
      out->append(held_, pos, value - pos);
      pos = value;
      if (formulas_ < strip_.size() && strip_[formulas_]) skipping_ = true;
      ++formulas_;
      if (!skipping_) {
        out->append(held_, pos, kFormulaEnd.size() - kFormulaEndTag.size());
        pos += kFormulaEnd.size() - kFormulaEndTag.size();
      }
    }
    held_.erase(0, pos);
  }

  // The rest. Internal if the part did not list exactly the formulas noted.
  Status Finish(std::string* out) {
    if (skipping_ || formulas_ != strip_.size()) {
      return Internal("XLSX export: the worksheet lists " + std::to_string(formulas_) +
                      " formulas, " + std::to_string(strip_.size()) + " were written");
    }
    out->append(held_);
    held_.clear();
    return Status::OK();
  }

 private:
  static constexpr std::string_view kFormulaEnd = "</f><v>";
  static constexpr std::string_view kFormulaEndTag = "</f>";
  static constexpr std::string_view kValueEnd = "</v>";

  const std::vector<bool>& strip_;
  size_t formulas_ = 0;
  bool skipping_ = false;
  std::string held_;  // the undecided tail
};

std::string ZipError(zip_t* zip) { return zip_error_strerror(zip_get_error(zip)); }

// Rewrites kSheetPart of the workbook at `path` through a FormulaValueFilter.
Status DropFormulaValues(const std::string& path, const std::vector<bool>& strip) {
  int code = 0;
  zip_t* zip = zip_open(path.c_str(), 0, &code);
  if (zip == nullptr) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    return Internal("XLSX export: cannot reopen " + path + ": " + message);
  }
  const std::string part_path = path + ".sheet1.xml";
  auto fail = [&](const std::string& what) {
    zip_discard(zip);
    std::remove(part_path.c_str());
    return Internal("XLSX export: " + what);
  };
  const zip_int64_t index = zip_name_locate(zip, kSheetPart, 0);
  if (index < 0) return fail(std::string("no ") + kSheetPart + " in the workbook");
  zip_file_t* in = zip_fopen_index(zip, static_cast<zip_uint64_t>(index), 0);
  if (in == nullptr) return fail("cannot read the worksheet: " + ZipError(zip));
  std::FILE* out = std::fopen(part_path.c_str(), "wb");
  if (out == nullptr) {
    zip_fclose(in);
    return fail("cannot create " + part_path);
  }
  FormulaValueFilter filter(strip);
  std::vector<char> buffer(size_t{1} << 16);
  std::string text;
  bool written = true;
  zip_int64_t n = 0;
  while ((n = zip_fread(in, buffer.data(), buffer.size())) > 0) {
    text.clear();
    filter.Feed(std::string_view(buffer.data(), static_cast<size_t>(n)), &text);
    written = written && std::fwrite(text.data(), 1, text.size(), out) == text.size();
  }
  zip_fclose(in);
  text.clear();
  Status finished = filter.Finish(&text);
  written = written && std::fwrite(text.data(), 1, text.size(), out) == text.size();
  written = std::fclose(out) == 0 && written;
  if (n < 0) return fail("cannot read the worksheet: " + ZipError(zip));
  if (!finished.ok()) return fail(finished.message());
  if (!written) return fail("cannot write " + part_path);
  zip_source_t* source = zip_source_file(zip, part_path.c_str(), 0, 0);
  if (source == nullptr) return fail("cannot read " + part_path + ": " + ZipError(zip));
  if (zip_file_replace(zip, static_cast<zip_uint64_t>(index), source, 0) < 0) {
    zip_source_free(source);
    return fail("cannot replace the worksheet: " + ZipError(zip));
  }
  zip_set_file_compression(zip, static_cast<zip_uint64_t>(index), ZIP_CM_DEFLATE, 0);
  if (zip_close(zip) < 0) return fail("cannot write " + path + ": " + ZipError(zip));
  std::remove(part_path.c_str());
  return Status::OK();
}

}  // namespace

struct XlsxFileWriter::Impl {
  lxw_workbook* workbook = nullptr;
  lxw_worksheet* worksheet = nullptr;
  std::string path;
  std::map<std::string, lxw_format*> formats;
  bool closed = false;
  // Per formula, in the worksheet's order (rows up, then columns up): true when its
  // result is unknown and its <v> goes. The row being written is kept apart, as the
  // worksheet lists a row's cells by column whatever order they were written in.
  std::vector<bool> strip;
  bool any_strip = false;
  lxw_row_t row = 0;
  std::map<lxw_col_t, bool> row_formulas;

  void NoteFormula(lxw_row_t r, lxw_col_t c, bool unknown_result) {
    if (r != row) {
      FlushRow();
      row = r;
    }
    row_formulas[c] = unknown_result;
    any_strip = any_strip || unknown_result;
  }
  void FlushRow() {
    for (const auto& [col, value] : row_formulas) strip.push_back(value);
    row_formulas.clear();
  }
};

XlsxFileWriter::XlsxFileWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

XlsxFileWriter::~XlsxFileWriter() {
  // libxlsxwriter frees a workbook only by closing it; the caller drops the file.
  if (impl_ && !impl_->closed) workbook_close(impl_->workbook);
}

Result<std::unique_ptr<XlsxFileWriter>> XlsxFileWriter::Create(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  lxw_workbook_options options = {};
  options.constant_memory = LXW_TRUE;
  impl->path = path;
  impl->workbook = workbook_new_opt(path.c_str(), &options);
  if (impl->workbook == nullptr) return Internal("libxlsxwriter: cannot create " + path);
  impl->worksheet = workbook_add_worksheet(impl->workbook, "Sheet1");
  if (impl->worksheet == nullptr) {
    workbook_close(impl->workbook);
    return Internal("libxlsxwriter: cannot add a worksheet");
  }
  return std::unique_ptr<XlsxFileWriter>(new XlsxFileWriter(std::move(impl)));
}

Status XlsxFileWriter::Write(const CellRef& ref, const Cell& cell) {
  if (ref.row > kXlsxMaxRows || ref.col > kXlsxMaxColumns) {
    return InvalidArgument("cell " + FormatCellRef(ref) +
                           " is outside XLSX's grid (1048576 rows, 16384 columns)");
  }
  lxw_format* format = nullptr;
  if (!cell.format.empty()) {
    auto [it, added] = impl_->formats.emplace(cell.format, nullptr);
    if (added) {
      it->second = workbook_add_format(impl_->workbook);
      format_set_num_format(it->second, cell.format.c_str());
    }
    format = it->second;
  }
  const auto row = static_cast<lxw_row_t>(ref.row - 1);
  const auto col = static_cast<lxw_col_t>(ref.col - 1);
  const CellValue& value = cell.value;
  lxw_error error = LXW_NO_ERROR;
  std::optional<bool> strip;  // set for a formula: whether its result is unknown
  if (value.is_number()) {
    error = worksheet_write_number(impl_->worksheet, row, col, value.number(), format);
  } else if (value.is_boolean()) {
    error = worksheet_write_boolean(impl_->worksheet, row, col, value.boolean(), format);
  } else if (value.is_formula() && cell.cached.get().is_number()) {
    error =
        worksheet_write_formula_num(impl_->worksheet, row, col, value.string().c_str(),
                                    format, cell.cached.get().number());
  } else if (value.is_formula() && cell.cached.get().is_string()) {
    error =
        worksheet_write_formula_str(impl_->worksheet, row, col, value.string().c_str(),
                                    format, cell.cached.get().string().c_str());
  } else if (value.is_formula()) {
    // No cached result (or a boolean one, which libxlsxwriter cannot write): Close()
    // drops the 0 libxlsxwriter writes, so the reader computes it.
    error = worksheet_write_formula(impl_->worksheet, row, col, value.string().c_str(),
                                    format);
    strip = true;
  } else if (value.is_string()) {
    error = worksheet_write_string(impl_->worksheet, row, col, value.string().c_str(),
                                   format);
  } else if (value.is_error()) {
    // libxlsxwriter writes no error cells: the error's text, as a spreadsheet shows it.
    error =
        worksheet_write_string(impl_->worksheet, row, col, value.error().c_str(), format);
  } else {
    error = worksheet_write_blank(impl_->worksheet, row, col, format);
  }
  if (error != LXW_NO_ERROR) {
    return InvalidArgument("cell " + FormatCellRef(ref) +
                           " cannot be written as XLSX: " + lxw_strerror(error));
  }
  if (value.is_formula()) impl_->NoteFormula(row, col, strip.value_or(false));
  return Status::OK();
}

Status XlsxFileWriter::Close() {
  impl_->closed = true;
  lxw_error error = workbook_close(impl_->workbook);
  if (error != LXW_NO_ERROR) {
    return Internal(std::string("libxlsxwriter: ") + lxw_strerror(error));
  }
  impl_->FlushRow();
  if (!impl_->any_strip) return Status::OK();
  return DropFormulaValues(impl_->path, impl_->strip);
}

}  // namespace sheetlog
