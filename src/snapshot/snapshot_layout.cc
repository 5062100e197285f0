#include "src/snapshot/snapshot_layout.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "emulator/json_text.h"

namespace sheetlog {

using nlohmann::json;

std::string SnapshotLayout::Name() const {
  // snprintf, not operator+: GCC 12 at -O3 raises false -Wstringop-overflow /
  // -Warray-bounds on the inlined std::string concatenation (PR 105651).
  char name[128];
  std::snprintf(name, sizeof(name), "v%lld-c%lld-t%lld-s%lld",
                static_cast<long long>(kSnapshotFormatVersion),
                static_cast<long long>(chunk_bytes), static_cast<long long>(tile_bytes),
                static_cast<long long>(stripe_rows));
  return name;
}

Status SnapshotLayout::Validate() const {
  if (chunk_bytes < 1024) return InvalidArgument("chunk_bytes must be at least 1024");
  if (tile_bytes < 1 || tile_bytes > chunk_bytes) {
    return InvalidArgument("tile_bytes must be in 1..chunk_bytes");
  }
  if (stripe_rows < 1) return InvalidArgument("stripe_rows must be at least 1");
  return Status::OK();
}

std::string SnapshotManifest::ToJson() const {
  json chunk_list = json::array();
  for (const ChunkInfo& chunk : chunks) {
    json tile_list = json::array();
    for (const TileInfo& t : chunk.tiles) {
      tile_list.push_back(json::array(
          {t.first_row, t.last_row, t.col_lo, t.col_hi, t.cells, t.offset, t.length}));
    }
    chunk_list.push_back(json{{"key", chunk.key},
                              {"bytes", chunk.bytes},
                              {"cells", chunk.cells},
                              {"tiles", std::move(tile_list)}});
  }
  json j{{"format", "sheetlog-snapshot"},
         {"version", kSnapshotFormatVersion},
         {"snapshot",
          {{"sheet", id.sheet_id},
           {"segment", id.segment},
           {"entry", id.entry},
           {"seq", id.seq}}},
         {"layout",
          {{"name", layout.Name()},
           {"chunk_bytes", layout.chunk_bytes},
           {"tile_bytes", layout.tile_bytes},
           {"stripe_rows", layout.stripe_rows}}},
         {"cells", cells},
         {"extent", {{"rows", rows}, {"cols", cols}}},
         {"chunks", std::move(chunk_list)}};
  return j.dump();
}

namespace {

// Reads an integer member, failing on absence or a wrong type.
bool GetInt(const json& object, const char* name, int64_t* out) {
  auto it = object.find(name);
  if (it == object.end() || !it->is_number_integer()) return false;
  *out = it->get<int64_t>();
  return true;
}

}  // namespace

Result<SnapshotManifest> SnapshotManifest::FromJson(std::string_view text) {
  json j = ParseJsonOrDiscarded(text);
  auto bad = [](const std::string& why) {
    return InvalidArgument("not a snapshot manifest: " + why);
  };
  if (!j.is_object()) return bad("not a JSON object");
  auto format = j.find("format");
  if (format == j.end() || *format != "sheetlog-snapshot") {
    return bad("wrong format name");
  }
  int64_t version = 0;
  if (!GetInt(j, "version", &version)) return bad("no version");
  if (version != kSnapshotFormatVersion) {
    return InvalidArgument("unsupported snapshot format version " +
                           std::to_string(version));
  }
  SnapshotManifest m;
  const json& snap = j.value("snapshot", json());
  if (!snap.is_object() || !snap.contains("sheet") || !snap["sheet"].is_string() ||
      !GetInt(snap, "segment", &m.id.segment) || !GetInt(snap, "entry", &m.id.entry) ||
      !GetInt(snap, "seq", &m.id.seq)) {
    return bad("bad snapshot id");
  }
  m.id.sheet_id = snap["sheet"].get<std::string>();
  const json& layout = j.value("layout", json());
  if (!layout.is_object() || !GetInt(layout, "chunk_bytes", &m.layout.chunk_bytes) ||
      !GetInt(layout, "tile_bytes", &m.layout.tile_bytes) ||
      !GetInt(layout, "stripe_rows", &m.layout.stripe_rows)) {
    return bad("bad layout");
  }
  const json& extent = j.value("extent", json());
  if (!GetInt(j, "cells", &m.cells) || !extent.is_object() ||
      !GetInt(extent, "rows", &m.rows) || !GetInt(extent, "cols", &m.cols)) {
    return bad("bad cell count or extent");
  }
  const json& chunks = j.value("chunks", json());
  if (!chunks.is_array()) return bad("no chunk list");
  for (const json& c : chunks) {
    ChunkInfo chunk;
    if (!c.is_object() || !c.contains("key") || !c["key"].is_string() ||
        !GetInt(c, "bytes", &chunk.bytes) || !GetInt(c, "cells", &chunk.cells) ||
        !c.contains("tiles") || !c["tiles"].is_array()) {
      return bad("bad chunk entry");
    }
    chunk.key = c["key"].get<std::string>();
    for (const json& t : c["tiles"]) {
      if (!t.is_array() || t.size() != 7) return bad("bad tile entry");
      for (const json& v : t) {
        if (!v.is_number_integer()) return bad("bad tile entry");
      }
      chunk.tiles.push_back(TileInfo{t[0].get<int64_t>(), t[1].get<int64_t>(),
                                     t[2].get<int64_t>(), t[3].get<int64_t>(),
                                     t[4].get<int64_t>(), t[5].get<int64_t>(),
                                     t[6].get<int64_t>()});
    }
    m.chunks.push_back(std::move(chunk));
  }
  return m;
}

}  // namespace sheetlog
