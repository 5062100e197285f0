// The file transfers over HTTP: see cli.h.
//
//   sheetlog import FILE [--sheet ID] [--at A1] [--mode replace|merge]
//                        [--format csv|xlsx] [--worksheet NAME]
//     Uploads FILE as an Import entry (POST uploads -> presigned PUT -> complete).
//     Without --sheet a new sheet named after the file is created. The format comes
//     from the file's extension unless given. Prints the sheet id and the entry.
//   sheetlog export SHEET [--format csv|xlsx] [-o FILE] [--at SEQ]
//     Streams GET .../export to FILE (default: standard output).
//
// Exit codes: 0 done; 1 the server refused (its error message is printed); 2 a usage
// error or the server could not be reached.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "emulator/json_text.h"
#include "src/cli/cli.h"

namespace sheetlog::cli {

namespace {

using nlohmann::json;

constexpr size_t kTransferChunkBytes = 1 << 20;

int Refused(const std::string& what, const Client::Response& response) {
  std::fprintf(stderr, "sheetlog: %s: %s\n", what.c_str(), response.error.c_str());
  return response.status == 0 ? 2 : 1;
}

// "csv" or "xlsx" from the file name's extension, "" if neither.
std::string FormatOfPath(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(c));
  if (extension == ".csv") return "csv";
  if (extension == ".xlsx") return "xlsx";
  return "";
}

// The path and query of an absolute URL the server handed out ("http://h:p/v1/...").
std::string PathOfUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t path = url.find('/', scheme + 3);
  return path == std::string::npos ? "/" : url.substr(path);
}

int RunImport(int argc, char** argv) {
  Flags flags(argc, argv, 2, {});
  if (!flags.error().empty()) return Fail(flags.error());
  std::optional<std::string> sheet = flags.Find("sheet");
  std::optional<std::string> at = flags.Find("at");
  std::optional<std::string> mode = flags.Find("mode");
  std::optional<std::string> worksheet = flags.Find("worksheet");
  std::optional<std::string> format = flags.Find("format");
  Client client(flags);
  if (std::string unused = flags.Unused(); !unused.empty()) {
    return Fail("import: unknown flag --" + unused);
  }
  if (flags.positional().size() != 1) {
    return Fail(
        "usage: sheetlog import FILE [--sheet ID] [--at A1] [--mode replace|merge]");
  }
  const std::string path = flags.positional()[0];
  if (!format) format = FormatOfPath(path);
  if (format->empty()) {
    return Fail("import: cannot tell the format of " + path +
                " from its name; give --format csv|xlsx");
  }
  std::error_code error;
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path, error));
  std::ifstream file(path, std::ios::binary);
  if (error || !file) return Fail("import: cannot read " + path);

  if (!sheet) {
    Client::Response created = client.Post(
        "/v1/sheets", json{{"name", std::filesystem::path(path).filename().string()}});
    if (created.status != 201) return Refused("creating a sheet", created);
    sheet = created.body.value("id", std::string());
  }
  json body{{"format", *format}};
  if (at) body["at"] = *at;
  if (mode) body["mode"] = *mode;
  if (worksheet) body["sheet"] = *worksheet;
  Client::Response upload =
      client.Post("/v1/sheets/" + *sheet + "/uploads",
                  json{{"type", "Import"}, {"body", body}, {"size", size}});
  if (upload.status != 201) return Refused("starting the upload", upload);
  const std::string upload_id = upload.body.value("upload_id", std::string());

  Progress progress("uploading " + path, size);
  std::vector<char> buffer(kTransferChunkBytes);
  // The presigned URL may point at the server or at its blob store (an S3 store mints
  // its own): sent to whichever origin it names, with no token (it carries its own
  // signature).
  const std::string url = upload.body.value("url", std::string());
  const size_t scheme = url.find("://");
  httplib::Client uploader(scheme == std::string::npos
                               ? client.base_url()
                               : url.substr(0, url.find('/', scheme + 3)));
  uploader.set_read_timeout(600, 0);
  httplib::Result put = uploader.Put(
      PathOfUrl(url), static_cast<size_t>(size),
      [&](size_t offset, size_t length, httplib::DataSink& sink) {
        file.seekg(static_cast<std::streamoff>(offset));
        file.read(buffer.data(),
                  static_cast<std::streamsize>(std::min(length, buffer.size())));
        const std::streamsize n = file.gcount();
        if (n <= 0) return false;
        progress.Update(static_cast<int64_t>(offset) + n);
        return sink.write(buffer.data(), static_cast<size_t>(n));
      },
      "application/octet-stream");
  if (!put) {
    return Fail("uploading " + path + ": " + httplib::to_string(put.error()));
  }
  if (put->status != 200) {
    std::fprintf(stderr, "sheetlog: uploading %s: HTTP %d %s\n", path.c_str(),
                 put->status, put->body.c_str());
    return 1;
  }
  Client::Response complete = client.Post(
      "/v1/sheets/" + *sheet + "/uploads/" + upload_id + "/complete", json::object());
  if (complete.status != 201) return Refused("importing " + path, complete);
  json out = complete.body;
  out["sheet"] = *sheet;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

int RunExport(int argc, char** argv) {
  Flags flags(argc, argv, 2, {});
  if (!flags.error().empty()) return Fail(flags.error());
  const std::string format = flags.Get("format", "csv");
  std::optional<std::string> output = flags.Find("output");
  std::optional<std::string> at = flags.Find("at");
  Client client(flags);
  if (std::string unused = flags.Unused(); !unused.empty()) {
    return Fail("export: unknown flag --" + unused);
  }
  // `-o FILE` arrives as two positionals (Flags knows only --flags).
  std::vector<std::string> positional;
  const std::vector<std::string>& args = flags.positional();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" && i + 1 < args.size()) {
      output = args[++i];
    } else {
      positional.push_back(args[i]);
    }
  }
  if (positional.size() != 1 || (format != "csv" && format != "xlsx")) {
    return Fail("usage: sheetlog export SHEET --format csv|xlsx [-o FILE]");
  }
  std::string path = "/v1/sheets/" + positional[0] + "/export?format=" + format;
  if (at) path += "&at=" + *at;

  const bool to_stdout = !output || *output == "-";
  const std::string partial = to_stdout ? "" : *output + ".part";
  std::FILE* out = to_stdout ? stdout : std::fopen(partial.c_str(), "wb");
  if (out == nullptr) return Fail("export: cannot write " + partial);
  int status = 0;
  std::string error_body;
  int64_t received = 0;
  std::unique_ptr<Progress> progress;
  httplib::Result result = client.http().Get(
      path,
      [&](const httplib::Response& response) {
        status = response.status;
        int64_t total = 0;
        if (response.has_header("Content-Length")) {
          total = std::stoll(response.get_header_value("Content-Length"));
        }
        progress = std::make_unique<Progress>("exporting", total);
        return true;
      },
      [&](const char* data, size_t length) {
        if (status != 200) {
          error_body.append(data, length);
          return true;
        }
        received += static_cast<int64_t>(length);
        progress->Update(received);
        return std::fwrite(data, 1, length, out) == length;
      });
  progress.reset();
  const bool written = (to_stdout ? std::fflush(out) : std::fclose(out)) == 0;
  auto discard = [&] {
    if (!to_stdout) std::remove(partial.c_str());
  };
  if (!result) {
    discard();
    return Fail("export: cannot reach the server at " + client.base_url() + " (" +
                httplib::to_string(result.error()) + ")");
  }
  if (status != 200) {
    discard();
    json body = ParseJsonOrDiscarded(error_body);
    std::string message = error_body;
    if (body.is_object() && body.contains("error")) {
      message = body["error"].value("code", std::string()) + ": " +
                body["error"].value("message", std::string());
    }
    std::fprintf(stderr, "sheetlog: export: HTTP %d %s\n", status, message.c_str());
    return 1;
  }
  if (!written || (!to_stdout && std::rename(partial.c_str(), output->c_str()) != 0)) {
    discard();
    return Fail("export: cannot write " + *output);
  }
  return 0;
}

}  // namespace

std::vector<Command> TransferCommands() {
  return {
      {"import",
       "import FILE [--sheet ID] [--at A1] [--mode replace|merge]   import a CSV or XLSX "
       "file",
       &RunImport,
       "Usage: sheetlog import FILE [--sheet ID] [--at A1] [--mode replace|merge]\n"
       "                       [--format csv|xlsx] [--worksheet NAME]\n"
       "\n"
       "Uploads FILE as an Import entry and prints the sheet's id and the entry. Exit "
       "1:\n"
       "the server refused the file (its message is printed); 2: a usage error or no\n"
       "server.\n"
       "\n"
       "  FILE               a .csv or .xlsx file\n"
       "  --sheet ID         import into this sheet (default: a new sheet named after\n"
       "                     the file)\n"
       "  --at A1            where the file's first cell goes (default A1)\n"
       "  --mode MODE        replace (the sheet becomes the file; the default) or merge\n"
       "                     (the file's cells written over the sheet)\n"
       "  --format FORMAT    csv or xlsx (default: from FILE's extension)\n"
       "  --worksheet NAME   XLSX: the worksheet to import (default: the first)\n"},
      {"export", "export SHEET --format csv|xlsx [-o FILE]   export a sheet to a file",
       &RunExport,
       "Usage: sheetlog export SHEET [--format csv|xlsx] [-o FILE] [--at SEQ]\n"
       "\n"
       "Streams the sheet's used range as CSV or XLSX to FILE (or standard output).\n"
       "Exit 1: the server refused (its message is printed); 2: a usage error or no\n"
       "server.\n"
       "\n"
       "  SHEET              the sheet's id\n"
       "  --format FORMAT    csv (the default) or xlsx\n"
       "  -o, --output FILE  write to FILE (default, or -: standard output)\n"
       "  --at SEQ           the sheet as of entry SEQ (default: the head)\n"},
  };
}

}  // namespace sheetlog::cli
