// The XLSX package layer: libzip reading through a PayloadSource, expat streaming a
// part. Contracts in xlsx_package.h.
#include "src/sheet/xlsx_package.h"

#include <expat.h>
#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace sheetlog::xlsx_package {

namespace {

constexpr size_t kInflateChunkBytes = 64 * 1024;

}  // namespace

// ---- The zip package, read through a PayloadSource (libzip's function source). ----

class ZipSourceAdapter {
 public:
  explicit ZipSourceAdapter(const PayloadSource& source) : source_(source) {
    zip_error_init(&error_);
  }
  ~ZipSourceAdapter() { zip_error_fini(&error_); }

  static zip_int64_t Callback(void* self, void* data, zip_uint64_t length,
                              zip_source_cmd_t command) {
    return static_cast<ZipSourceAdapter*>(self)->Handle(data, length, command);
  }

 private:
  zip_int64_t Handle(void* data, zip_uint64_t length, zip_source_cmd_t command) {
    const auto size = static_cast<zip_uint64_t>(source_.size());
    switch (command) {
      case ZIP_SOURCE_OPEN:
        position_ = 0;
        return 0;
      case ZIP_SOURCE_READ: {
        const zip_uint64_t n = std::min<zip_uint64_t>(length, size - position_);
        if (n == 0) return 0;
        Result<std::string> piece =
            source_.ReadAt(static_cast<int64_t>(position_), static_cast<int64_t>(n));
        if (!piece.ok() || piece->size() != n) {
          zip_error_set(&error_, ZIP_ER_READ, EIO);
          return -1;
        }
        std::memcpy(data, piece->data(), n);
        position_ += n;
        return static_cast<zip_int64_t>(n);
      }
      case ZIP_SOURCE_CLOSE:
      case ZIP_SOURCE_FREE:
        return 0;
      case ZIP_SOURCE_STAT: {
        auto* stat = static_cast<zip_stat_t*>(data);
        zip_stat_init(stat);
        stat->size = size;
        stat->valid |= ZIP_STAT_SIZE;
        return sizeof(zip_stat_t);
      }
      case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&error_, data, length);
      case ZIP_SOURCE_SEEK: {
        const zip_int64_t next =
            zip_source_seek_compute_offset(position_, size, data, length, &error_);
        if (next < 0) return -1;
        position_ = static_cast<zip_uint64_t>(next);
        return 0;
      }
      case ZIP_SOURCE_TELL:
        return static_cast<zip_int64_t>(position_);
      case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(
            ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
            ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL,
            ZIP_SOURCE_SUPPORTS, -1);
      default:
        zip_error_set(&error_, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
  }

  const PayloadSource& source_;
  zip_error_t error_;
  zip_uint64_t position_ = 0;
};

ZipPackage::ZipPackage() = default;

ZipPackage::~ZipPackage() {
  if (zip_ != nullptr) zip_discard(zip_);
}

Status ZipPackage::Open(const PayloadSource& source) {
  adapter_ = std::make_unique<ZipSourceAdapter>(source);
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* zip_source =
      zip_source_function_create(&ZipSourceAdapter::Callback, adapter_.get(), &error);
  if (zip_source == nullptr) {
    zip_error_fini(&error);
    return Internal("libzip: cannot create a source");
  }
  zip_ = zip_open_from_source(zip_source, ZIP_RDONLY, &error);
  if (zip_ == nullptr) {
    std::string why = zip_error_strerror(&error);
    zip_source_free(zip_source);
    zip_error_fini(&error);
    return InvalidArgument("XLSX: the file is truncated or not a zip package (" + why +
                           ")");
  }
  zip_error_fini(&error);
  return Status::OK();
}

bool ZipPackage::Has(const std::string& name) const {
  return zip_name_locate(zip_, name.c_str(), 0) >= 0;
}

Status ZipPackage::Stream(const std::string& name, int64_t limit,
                          const std::function<Status(std::string_view)>& chunk) {
  zip_stat_t stat;
  if (zip_stat(zip_, name.c_str(), 0, &stat) != 0) {
    return InvalidArgument("XLSX: the package has no part '" + name + "'");
  }
  if ((stat.valid & ZIP_STAT_SIZE) == 0) {
    return InvalidArgument("XLSX part '" + name + "' does not declare its size");
  }
  if (stat.size > static_cast<zip_uint64_t>(limit)) {
    return InvalidArgument("XLSX part '" + name + "' claims " +
                           std::to_string(stat.size) +
                           " bytes uncompressed, more than the limit of " +
                           std::to_string(limit) + " bytes");
  }
  zip_file_t* file = zip_fopen_index(zip_, stat.index, 0);
  if (file == nullptr) {
    return InvalidArgument("XLSX part '" + name +
                           "' cannot be opened: " + zip_strerror(zip_));
  }
  std::vector<char> buffer(kInflateChunkBytes);
  zip_uint64_t total = 0;
  Status status;
  while (status.ok()) {
    const zip_int64_t n = zip_fread(file, buffer.data(), buffer.size());
    if (n < 0) {
      status = InvalidArgument("XLSX part '" + name +
                               "' is damaged: " + zip_file_strerror(file));
      break;
    }
    if (n == 0) break;
    total += static_cast<zip_uint64_t>(n);
    if (total > stat.size) {
      status =
          InvalidArgument("XLSX part '" + name + "' inflates past its declared size of " +
                          std::to_string(stat.size) + " bytes");
      break;
    }
    status = chunk(std::string_view(buffer.data(), static_cast<size_t>(n)));
  }
  zip_fclose(file);
  return status;
}

// ---- XML parts through expat. ----

std::string_view LocalName(const char* name) {
  std::string_view text(name);
  const size_t colon = text.rfind(':');
  return colon == std::string_view::npos ? text : text.substr(colon + 1);
}

const char* Attribute(const char** attributes, std::string_view local) {
  for (size_t i = 0; attributes[i] != nullptr; i += 2) {
    if (LocalName(attributes[i]) == local) return attributes[i + 1];
  }
  return nullptr;
}

namespace {

class XmlStream {
 public:
  XmlStream(std::string part, XmlHandler* handler)
      : part_(std::move(part)), handler_(handler), parser_(XML_ParserCreate(nullptr)) {
    XML_SetUserData(parser_, this);
    XML_SetElementHandler(parser_, &XmlStream::OnStart, &XmlStream::OnEnd);
    XML_SetCharacterDataHandler(parser_, &XmlStream::OnText);
    // No document type declarations at all: that is where entity bombs live, and no
    // spreadsheet part needs one.
    XML_SetStartDoctypeDeclHandler(parser_, &XmlStream::OnDoctype);
  }
  ~XmlStream() { XML_ParserFree(parser_); }

  Status Feed(std::string_view bytes, bool last) {
    if (XML_Parse(parser_, bytes.data(), static_cast<int>(bytes.size()), last ? 1 : 0) ==
        XML_STATUS_OK) {
      return Status::OK();
    }
    if (!status_.ok()) return status_;
    return InvalidArgument("XLSX part '" + part_ + "' is not well-formed XML (line " +
                           std::to_string(XML_GetCurrentLineNumber(parser_)) + ": " +
                           XML_ErrorString(XML_GetErrorCode(parser_)) + ")");
  }

 private:
  void Stop(Status status) {
    if (status.ok() || !status_.ok()) return;
    status_ = std::move(status);
    XML_StopParser(parser_, XML_FALSE);
  }
  static void OnStart(void* self, const char* name, const char** attributes) {
    auto* s = static_cast<XmlStream*>(self);
    if (s->status_.ok()) s->Stop(s->handler_->Start(LocalName(name), attributes));
  }
  static void OnEnd(void* self, const char* name) {
    auto* s = static_cast<XmlStream*>(self);
    if (s->status_.ok()) s->Stop(s->handler_->End(LocalName(name)));
  }
  static void OnText(void* self, const char* text, int length) {
    auto* s = static_cast<XmlStream*>(self);
    if (s->status_.ok()) {
      s->Stop(s->handler_->Text(std::string_view(text, static_cast<size_t>(length))));
    }
  }
  static void OnDoctype(void* self, const char*, const char*, const char*, int) {
    auto* s = static_cast<XmlStream*>(self);
    s->Stop(InvalidArgument("XLSX part '" + s->part_ +
                            "' has a DOCTYPE declaration, which spreadsheet files "
                            "never need (refused: entity expansion bombs live there)"));
  }

  std::string part_;
  XmlHandler* handler_;
  XML_Parser parser_;
  Status status_;
};

}  // namespace

Status ParsePart(ZipPackage& zip, const std::string& part, int64_t limit,
                 XmlHandler* handler) {
  XmlStream xml(part, handler);
  RETURN_IF_ERROR(zip.Stream(part, limit, [&](std::string_view bytes) {
    return xml.Feed(bytes, /*last=*/false);
  }));
  return xml.Feed({}, /*last=*/true);
}

}  // namespace sheetlog::xlsx_package
