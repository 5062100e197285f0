#include "src/api/spreadsheet_routes.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <memory>

#include "emulator/env/scratch_file.h"
#include "emulator/json_text.h"
#include "src/api/request_params.h"
#include "src/log/event_log.h"
#include "src/log/pending_snapshots.h"
#include "src/log/tables.h"
#include "src/sheet/csv.h"
#include "src/sheet/xlsx.h"
#include "src/snapshot/cells_at.h"
#include "src/snapshot/head_view_cache.h"
#include "src/snapshot/sheet_view.h"

namespace sheetlog::api {

namespace {

// Most positions one GET .../cells may span (1024 x 1024): the answer is a dense JSON
// array of rows, so a bigger rectangle is refused rather than built.
constexpr int64_t kMaxRangeCells = int64_t{1} << 20;
// Positions per export band: one band's cells are read and written at a time.
constexpr int64_t kExportBandCells = int64_t{1} << 16;
// Bytes per read of an exported XLSX file while it is sent.
constexpr int64_t kXlsxReadBytes = int64_t{1} << 20;
// Most positions (rows x columns of the used range, empty ones included) an export
// may span: a CSV writes every position (an empty one is still a comma), and both
// formats read the range in bands. The most cells an import may hold, so a sheet
// imported whole exports whole. README, "GET .../export".
constexpr int64_t kMaxExportPositions = 100'000'000;

json ValueRows(const std::vector<std::vector<CellValue>>& rows) {
  json out = json::array();
  for (const auto& row : rows) {
    json values = json::array();
    for (const CellValue& v : row) values.push_back(v.ToJson());
    out.push_back(std::move(values));
  }
  return out;
}

// The rows of the sheet in bands of whole rows, each band's cells sorted, walking
// rows 1..last_row and columns 1..last_col.
class BandWalker {
 public:
  BandWalker(std::shared_ptr<const SheetView> view, int64_t last_row, int64_t last_col)
      : view_(std::move(view)),
        last_row_(last_row),
        last_col_(last_col),
        band_rows_(
            std::max<int64_t>(1, kExportBandCells / std::max<int64_t>(1, last_col))) {}

  bool done() const { return next_row_ > last_row_; }
  CellRange NextBand() {
    CellRange band{{next_row_, 1},
                   {std::min(last_row_, next_row_ + band_rows_ - 1), last_col_}};
    next_row_ = band.last.row + 1;
    return band;
  }
  const SheetView& view() const { return *view_; }

 private:
  std::shared_ptr<const SheetView> view_;
  int64_t last_row_;
  int64_t last_col_;
  int64_t band_rows_;
  int64_t next_row_ = 1;
};

// Refuses an export past its bound before anything is sent or written: 422
// ExportTooLarge, carrying the used range (and the limit it passes).
void CheckExportBound(const std::string& format, const CellRef& used) {
  if (used.row == 0 || used.col == 0) return;
  const std::string range = "A1:" + FormatCellRef(used);
  if (used.row > kMaxExportPositions / used.col) {
    throw ApiError(422, "ExportTooLarge",
                   "the sheet's used range " + range + " spans " +
                       std::to_string(used.row * used.col) +
                       " positions (rows x columns), more than an export's limit of " +
                       std::to_string(kMaxExportPositions) +
                       "; read it in parts with GET .../cells",
                   json{{"used_range", range}, {"limit", kMaxExportPositions}});
  }
  if (format == "xlsx" && (used.row > kXlsxMaxRows || used.col > kXlsxMaxColumns)) {
    throw ApiError(
        422, "ExportTooLarge",
        "the sheet's used range " + range +
            " is larger than XLSX's grid (1048576 rows, 16384 columns); export it as csv",
        json{{"used_range", range},
             {"max_rows", kXlsxMaxRows},
             {"max_columns", kXlsxMaxColumns}});
  }
}

// CSV of one band: every row of it, `cols` fields each. Written from the band's cells
// (an empty field is just its comma), so memory is the band's cells and text, not a
// record as wide as the range.
Status AppendBandCsv(const SheetView& view, const CellRange& band, std::string* out) {
  ASSIGN_OR_RETURN(std::vector<PlacedCell> cells, view.Cells(band));
  const int64_t cols = band.columns();
  size_t next = 0;
  for (int64_t row = band.first.row; row <= band.last.row; ++row) {
    int64_t separators = 0;  // commas written in this row: one before each field but
                             // the first
    for (; next < cells.size() && cells[next].ref.row == row; ++next) {
      const int64_t field = cells[next].ref.col - band.first.col;  // 0-based
      out->append(static_cast<size_t>(field - separators), ',');
      separators = field;
      AppendCsvField(cells[next].cell.value, out);
    }
    out->append(static_cast<size_t>(cols - 1 - separators), ',');
    out->append("\r\n");
  }
  return Status::OK();
}

// Pass two of an XLSX export: the workbook is written band by band to a scratch file
// (libxlsxwriter's constant_memory mode keeps one row in memory), then streamed from
// it with its length. Writing completes before the 200, so every error is an ordinary
// error response. The file goes when the response is done with it.
void ReplyXlsx(Call& call, const std::shared_ptr<const SheetView>& view,
               const CellRef& used) {
  std::shared_ptr<ScratchFile> file(Check(ScratchFile::Create(".xlsx")).release());
  std::unique_ptr<XlsxFileWriter> writer = Check(XlsxFileWriter::Create(file->path()));
  BandWalker walker(view, used.row, used.col);
  while (used.row > 0 && !walker.done()) {
    for (const PlacedCell& cell : Check(view->Cells(walker.NextBand()))) {
      Check(writer->Write(cell.ref, cell.cell));
    }
  }
  Check(writer->Close());
  const int64_t size = Check(file->Size());
  call.res.status = 200;
  call.res.set_content_provider(
      static_cast<size_t>(size),
      "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
      [file](size_t offset, size_t length, http::DataSink& sink) {
        Result<std::string> piece =
            file->ReadAt(static_cast<int64_t>(offset),
                         std::min<int64_t>(static_cast<int64_t>(length), kXlsxReadBytes));
        if (!piece.ok() || piece->empty()) return false;
        return sink.write(piece->data(), piece->size());
      });
}

std::string SnapshotState(const EntryRecord& entry,
                          const std::optional<PendingSnapshot>& pending) {
  if (entry.snapshot_root) return "completed";
  if (!pending) return "queued";
  return pending->active ? "building" : "waiting";
}

json PendingJson(const PendingSnapshot& pending) {
  json checkpoint = nullptr;
  if (pending.state) {
    checkpoint = ParseJsonOrDiscarded(*pending.state);
    if (checkpoint.is_discarded()) checkpoint = *pending.state;
  }
  return json{{"created", pending.created},
              {"modified", pending.modified},
              {"active", pending.active},
              {"increment", pending.increment},
              {"checkpoint", checkpoint}};
}

}  // namespace

void SpreadsheetRoutes::AddTo(Router& router) {
  AddRoutes<SpreadsheetRoutes>(
      router, this,
      {
          {"GET", R"(/v1/sheets/([^/]+)/cells)", &SpreadsheetRoutes::ReadCells},
          {"GET", R"(/v1/sheets/([^/]+)/used-range)", &SpreadsheetRoutes::UsedRange},
          {"GET", R"(/v1/sheets/([^/]+)/export)", &SpreadsheetRoutes::Export},
          {"POST", R"(/v1/sheets/([^/]+)/snapshots)",
           &SpreadsheetRoutes::RequestSnapshot},
          {"GET", R"(/v1/sheets/([^/]+)/snapshots)", &SpreadsheetRoutes::ListSnapshots},
      });
}

std::shared_ptr<const SheetView> SpreadsheetRoutes::OpenView(const std::string& id,
                                                             std::optional<int64_t> at,
                                                             UnitMeter* meter) {
  auto open = [&]() -> Result<std::shared_ptr<const SheetView>> {
    if (!at) return head_views_.AtHead(id, meter);
    ASSIGN_OR_RETURN(std::unique_ptr<SheetView> opened,
                     SheetView::Open(&log_, blobs_, id, at, meter));
    return std::shared_ptr<const SheetView>(std::move(opened));
  };
  Result<std::shared_ptr<const SheetView>> view = open();
  if (view.ok()) return std::move(view).value();
  json extra = json::object();
  if (view.status().code() == StatusCode::kGone) {
    Result<SheetInfo> sheet = log_.GetSheet(id, meter);
    if (sheet.ok()) extra["first_seq"] = sheet->first_seq;
  }
  throw ApiError::FromStatus(view.status(), extra);
}

template <typename T>
Result<T> SpreadsheetRoutes::ReadView(
    const std::string& id, std::optional<int64_t> at, UnitMeter* meter,
    std::shared_ptr<const SheetView>* view,
    const std::function<Result<T>(const SheetView&)>& read) {
  *view = OpenView(id, at, meter);
  Result<T> result = read(**view);
  if (!at && !result.ok() && result.status().IsNotFound() && (*view)->snapshot_seq()) {
    Result<std::shared_ptr<const SheetView>> reopened = head_views_.Reopen(id, meter);
    if (!reopened.ok()) throw ApiError::FromStatus(reopened.status());
    *view = std::move(reopened).value();
    result = read(**view);
  }
  return result;
}

void SpreadsheetRoutes::ReadCells(Call& call) {
  std::string id = SheetId(call);
  std::optional<std::string> range_text = call.Query("range");
  if (!range_text) {
    throw ApiError::Validation("query parameter 'range' is required (e.g. A1:D20)");
  }
  Result<CellRange> range = ParseRange(*range_text);
  if (!range.ok()) {
    throw ApiError::Validation("query parameter 'range': " + range.status().message());
  }
  const std::optional<int64_t> at = QuerySeq(call, "at");
  // Check the size before any read: a refused range costs nothing.
  if (range->rows() > kMaxRangeCells / range->columns()) {
    throw ApiError::Validation("range " + FormatRange(*range) + " spans more than " +
                               std::to_string(kMaxRangeCells) +
                               " cells; read it in parts");
  }
  std::shared_ptr<const SheetView> view;
  std::vector<PlacedCell> cells = Check(ReadView<std::vector<PlacedCell>>(
      id, at, &call.meter, &view, [&](const SheetView& v) { return v.Cells(*range); }));
  Sheet::RangeValues values = Check(RangeValuesOf(*range, cells, kMaxRangeCells));
  json out{{"range", FormatRange(*range)},
           {"at_seq", view->at_seq()},
           {"rows", ValueRows(values.values)}};
  if (values.has_formats) out["formats"] = values.formats;
  if (values.has_cached) out["cached"] = ValueRows(values.cached);
  call.res.set_header("X-Snapshot-Seq", view->snapshot_seq()
                                            ? std::to_string(*view->snapshot_seq())
                                            : std::string("none"));
  call.res.set_header("X-Entries-Applied", std::to_string(view->entries_applied()));
  call.Reply(200, out);
}

// Beyond api.md: the used range (the last row and column holding a cell), for a
// client's Ctrl+End and data edges. Costs what the sheet's cells do, never its grid
// area (SheetView::UsedExtent).
void SpreadsheetRoutes::UsedRange(Call& call) {
  std::string id = SheetId(call);
  std::shared_ptr<const SheetView> view;
  const CellRef used =
      Check(ReadView<CellRef>(id, QuerySeq(call, "at"), &call.meter, &view,
                              [](const SheetView& v) { return v.UsedExtent(); }));
  const bool empty = used.row == 0 || used.col == 0;
  call.Reply(200,
             json{{"range", empty ? json(nullptr) : json("A1:" + FormatCellRef(used))},
                  {"last_row", used.row},
                  {"last_column", used.col},
                  {"at_seq", view->at_seq()}});
}

void SpreadsheetRoutes::Export(Call& call) {
  std::string id = SheetId(call);
  const std::string format = call.Query("format").value_or("csv");
  if (format != "csv" && format != "xlsx") {
    throw ApiError::Validation("query parameter 'format' must be csv or xlsx, got '" +
                               format + "'");
  }
  // Pass one finds the exact extent, so the export is a rectangle of the used range
  // with nothing trailing; one past the bound is refused before any header is set.
  std::shared_ptr<const SheetView> view;
  const CellRef used =
      Check(ReadView<CellRef>(id, QuerySeq(call, "at"), &call.meter, &view,
                              [](const SheetView& v) { return v.UsedExtent(); }));
  CheckExportBound(format, used);
  call.res.set_header("Content-Disposition",
                      "attachment; filename=\"" + id + "." + format + "\"");
  call.res.set_header("X-At-Seq", std::to_string(view->at_seq()));
  if (format == "xlsx") {
    ReplyXlsx(call, view, used);
    return;
  }
  // Pass two streams the CSV band by band. An error in it (after the 200) ends the
  // chunked body without its terminator, which HTTP clients report as a truncated
  // response.
  auto walker = std::make_shared<BandWalker>(view, used.row, used.col);
  call.res.status = 200;
  call.res.set_chunked_content_provider(
      "text/csv; charset=utf-8", [walker](size_t, http::DataSink& sink) {
        if (walker->done()) {
          sink.done();
          return true;
        }
        std::string text;
        Status band = AppendBandCsv(walker->view(), walker->NextBand(), &text);
        if (!band.ok()) {
          spdlog::error("export stopped: {}", band.ToString());
          return false;
        }
        return sink.write(text.data(), text.size());
      });
}

// An extension of api.md: append a Snapshot entry now, whatever snapshot_every says
// (tests and clients that want a snapshot at a known seq). The pipeline builds it.
void SpreadsheetRoutes::RequestSnapshot(Call& call) {
  std::string id = SheetId(call);
  json body = call.Body();
  FieldReader(body, "request body").Finish();
  AppendRequest request;
  request.sheet_id = id;
  request.type = kSnapshotType;
  request.allow_reserved = true;
  AppendResult appended = Check(log_.AddEntry(request, &call.meter, nullptr));
  call.Reply(201, AppendResultJson(appended));
}

void SpreadsheetRoutes::ListSnapshots(Call& call) {
  std::string id = SheetId(call);
  SheetInfo sheet = Check(log_.GetSheet(id, &call.meter));
  std::map<std::pair<int64_t, int64_t>, PendingSnapshot> pending;
  for (PendingSnapshot& p : Check(log_.pending_snapshots()->List(id, &call.meter))) {
    pending[{p.segment, p.entry}] = std::move(p);
  }
  // Every Snapshot entry of the retained log, oldest first (a filtered scan of the
  // sheet's entries, charged as DynamoDB charges a query with a filter: every item
  // read).
  json snapshots = json::array();
  for (int64_t next = sheet.first_seq;;) {
    ReadRange page = Check(log_.Read(id, next, std::nullopt, 1000, &call.meter));
    if (page.entries.empty()) break;
    next = page.entries.back().seq + 1;
    for (const EntryRecord& e : page.entries) {
      if (e.type != kSnapshotType) continue;
      auto found = pending.find({e.segment, e.num});
      std::optional<PendingSnapshot> item;
      if (found != pending.end()) item = found->second;
      json out{{"seq", e.seq},
               {"segment", e.segment},
               {"num", e.num},
               {"created", e.created},
               {"state", SnapshotState(e, item)},
               {"root", e.snapshot_root ? json(*e.snapshot_root) : json(nullptr)},
               {"pending", item ? PendingJson(*item) : json(nullptr)}};
      if (e.snapshot_root) out["manifest_url"] = entries_.ManifestUrl(*e.snapshot_root);
      snapshots.push_back(std::move(out));
    }
  }
  call.Reply(200, json{{"snapshots", snapshots}});
}

}  // namespace sheetlog::api
