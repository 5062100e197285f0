// XlsxFileWriter (xlsx.h): libxlsxwriter in constant_memory mode, one worksheet.
#include <xlsxwriter.h>

#include <map>

#include "src/sheet/xlsx.h"

namespace sheetlog {

struct XlsxFileWriter::Impl {
  lxw_workbook* workbook = nullptr;
  lxw_worksheet* worksheet = nullptr;
  std::map<std::string, lxw_format*> formats;
  bool closed = false;
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
    // No cached result (or a boolean one, which libxlsxwriter cannot write): the
    // reader computes it.
    error = worksheet_write_formula(impl_->worksheet, row, col, value.string().c_str(),
                                    format);
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
  return Status::OK();
}

Status XlsxFileWriter::Close() {
  impl_->closed = true;
  lxw_error error = workbook_close(impl_->workbook);
  if (error != LXW_NO_ERROR) {
    return Internal(std::string("libxlsxwriter: ") + lxw_strerror(error));
  }
  return Status::OK();
}

}  // namespace sheetlog
