// The XLSX package layer: the zip container, read through a PayloadSource (libzip), and
// its XML parts, streamed through expat. Internal to the XLSX reader (xlsx_reader.cc):
// other code goes through ReadXlsx (xlsx.h). Both refuse what a hostile file could use
// against the reader: a part that claims or inflates past a limit, XML with a DOCTYPE.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "emulator/status.h"
#include "src/sheet/import_file.h"

struct zip;  // libzip's zip_t

namespace sheetlog::xlsx_package {

class ZipSourceAdapter;

// A zip package read in place through a PayloadSource (nothing is copied whole).
class ZipPackage {
 public:
  ZipPackage();
  ZipPackage(const ZipPackage&) = delete;
  ZipPackage& operator=(const ZipPackage&) = delete;
  ~ZipPackage();

  // `source` must outlive the package. InvalidArgument "XLSX: the file is truncated or
  // not a zip package (...)" for anything libzip cannot open.
  Status Open(const PayloadSource& source);

  bool Has(const std::string& name) const;

  // Inflates part `name` and passes it on in pieces. Refuses a part whose directory
  // entry claims more than `limit` bytes before inflating anything, and one that
  // inflates past its claim.
  Status Stream(const std::string& name, int64_t limit,
                const std::function<Status(std::string_view)>& chunk);

 private:
  std::unique_ptr<ZipSourceAdapter> adapter_;
  ::zip* zip_ = nullptr;
};

// "x:row" -> "row": an element or attribute name without its namespace prefix.
std::string_view LocalName(const char* name);

// The value of the attribute whose local name is `local` (any prefix), or nullptr.
// `attributes` is expat's: name, value, name, value, ..., nullptr.
const char* Attribute(const char** attributes, std::string_view local);

// Receives one XML part's events, names without their namespace prefix. An error stops
// the parse and is what ParsePart returns.
class XmlHandler {
 public:
  virtual ~XmlHandler() = default;
  virtual Status Start(std::string_view name, const char** attributes) = 0;
  virtual Status End(std::string_view name) = 0;
  virtual Status Text(std::string_view) { return Status::OK(); }
};

// Streams part `part` of `zip` (at most `limit` bytes inflated) through `handler`.
// InvalidArgument for a missing or oversized part, malformed XML (with the line) or a
// DOCTYPE declaration (entity expansion bombs live there); else the handler's error.
Status ParsePart(ZipPackage& zip, const std::string& part, int64_t limit,
                 XmlHandler* handler);

}  // namespace sheetlog::xlsx_package
