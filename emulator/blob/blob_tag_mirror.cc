#include "emulator/blob/blob_tag_mirror.h"

#include <nlohmann/json.hpp>

#include "emulator/table/table.h"

namespace sheetlog {

namespace {

// Rows per page of ForEach.
constexpr int kBlobMirrorScanPage = 500;

const Table& BlobMirrorTable() {
  static const Table table(
      TableSchema{"blob_mirror",
                  {"blob_key"},
                  {},
                  {{"blob_key", "K"}, {"tags", "T"}, {"created_micros", "C"}}});
  return table;
}

std::string MirrorTagsJson(const BlobTags& tags) { return nlohmann::json(tags).dump(); }

BlobTags MirrorTagsOf(const std::string& text) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  BlobTags tags;
  if (!parsed.is_object()) return tags;
  for (auto it = parsed.begin(); it != parsed.end(); ++it) {
    if (it->is_string()) tags[it.key()] = it->get<std::string>();
  }
  return tags;
}

BlobTagMirror::Row RowOf(Item& item) {
  return BlobTagMirror::Row{MirrorTagsOf(item["tags"].AsString()),
                            item["created_micros"].AsInt()};
}

}  // namespace

Result<std::optional<BlobTagMirror::Row>> BlobTagMirror::Read(const std::string& key) {
  ASSIGN_OR_RETURN(std::vector<std::optional<Row>> rows, ReadMany({key}));
  return std::move(rows.front());
}

Result<std::vector<std::optional<BlobTagMirror::Row>>> BlobTagMirror::ReadMany(
    const std::vector<std::string>& keys) {
  std::vector<std::optional<Row>> rows(keys.size());
  if (keys.empty()) return rows;
  RETURN_IF_ERROR(tables_->Read([&](Connection& conn) -> Status {
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSIGN_OR_RETURN(
          std::optional<Item> item,
          BlobMirrorTable().Get(conn, Key{{keys[i]}, {}}, Consistency::kStrong, nullptr));
      if (item) rows[i] = RowOf(*item);
    }
    return Status::OK();
  }));
  return rows;
}

Status BlobTagMirror::Write(const std::string& key, const Row& row) {
  return tables_->Write([&](Connection& conn) {
    return BlobMirrorTable().Put(conn,
                                 Item{{"blob_key", key},
                                      {"tags", MirrorTagsJson(row.tags)},
                                      {"created_micros", row.created_micros}},
                                 {}, nullptr);
  });
}

Status BlobTagMirror::Delete(const std::vector<std::string>& keys) {
  if (keys.empty()) return Status::OK();
  return tables_->Write([&](Connection& conn) -> Status {
    for (const std::string& key : keys) {
      RETURN_IF_ERROR(BlobMirrorTable().Delete(conn, Key{{key}, {}}, {}, nullptr));
    }
    return Status::OK();
  });
}

Status BlobTagMirror::ForEach(
    const std::function<bool(const std::string& key, const Row& row)>& visit) {
  std::optional<KeyValues> start;
  while (true) {
    QueryResult page;
    RETURN_IF_ERROR(tables_->Read([&](Connection& conn) -> Status {
      ASSIGN_OR_RETURN(page, BlobMirrorTable().Scan(conn, start, kBlobMirrorScanPage,
                                                    Consistency::kEventual, nullptr));
      return Status::OK();
    }));
    for (Item& item : page.items) {
      if (!visit(item["blob_key"].AsString(), RowOf(item))) return Status::OK();
    }
    if (!page.last_evaluated) return Status::OK();
    start = page.last_evaluated;
  }
}

Result<int64_t> BlobTagMirror::DeleteAll() {
  int64_t deleted = 0;
  RETURN_IF_ERROR(tables_->Write([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(deleted, BlobMirrorTable().DeleteAll(conn));
    return Status::OK();
  }));
  return deleted;
}

}  // namespace sheetlog
