// The operations commands over HTTP (see cli.h): verify, rebuild-snapshots, reprocess;
// and backup.
// Each prints what it found and did and a summary line (or, with --json, one JSON
// document on stdout), and shows progress on a terminal. Exit codes: 0 all well, 1 the
// run found problems (violations, snapshots that could not be rebuilt), 2 usage errors
// and failures to reach the server.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "emulator/env/time_text.h"
#include "src/cli/cli.h"

namespace sheetlog::cli {

namespace {

using nlohmann::json;

// Parses the flags common to every operation; returns false (after printing why) on
// a usage error.
bool ParseFlags(Flags& flags, size_t max_positional, const char* usage, int* exit_code) {
  if (!flags.error().empty()) {
    *exit_code = Fail(flags.error());
    return false;
  }
  if (flags.positional().size() > max_positional) {
    *exit_code = Fail("unexpected argument '" + flags.positional().back() +
                      "'; usage: sheetlog " + usage);
    return false;
  }
  return true;
}

bool RejectUnused(const Flags& flags, const char* usage, int* exit_code) {
  if (std::string unused = flags.Unused(); !unused.empty()) {
    *exit_code = Fail("unknown flag --" + unused + "; usage: sheetlog " + usage);
    return true;
  }
  return false;
}

// The ids of every sheet, page by page. nullopt (after printing why) on failure.
std::optional<std::vector<std::string>> AllSheets(Client& client) {
  std::vector<std::string> ids;
  std::string after;
  while (true) {
    Client::Response page =
        client.Get("/v1/sheets?limit=1000" + (after.empty() ? "" : "&after=" + after));
    if (page.status != 200) {
      Fail("listing sheets: " + page.error);
      return std::nullopt;
    }
    for (const json& sheet : page.body["sheets"]) ids.push_back(sheet["id"]);
    if (page.body["next"].is_null()) return ids;
    after = page.body["next"];
  }
}

// Runs `post(sheet)` for the one sheet of --sheet or for every sheet, with a progress
// line, merging the JSON reports by adding numbers and concatenating arrays.
int ForEachSheet(Client& client, const std::optional<std::string>& sheet,
                 const char* label,
                 const std::function<Client::Response(const std::string& sheet)>& post,
                 json* merged) {
  std::vector<std::string> sheets;
  if (sheet) {
    sheets.push_back(*sheet);
  } else if (std::optional<std::vector<std::string>> all = AllSheets(client)) {
    sheets = std::move(*all);
  } else {
    return 2;
  }
  Progress progress(label, static_cast<int64_t>(sheets.size()));
  int64_t done = 0;
  for (const std::string& id : sheets) {
    Client::Response r = post(id);
    if (r.status != 200) return Fail("sheet " + id + ": " + r.error);
    for (const auto& [key, value] : r.body.items()) {
      json& into = (*merged)[key];
      if (value.is_number_integer()) {
        into = into.is_null() ? value.get<int64_t>()
                              : into.get<int64_t>() + value.get<int64_t>();
      } else if (value.is_array()) {
        if (into.is_null()) into = json::array();
        for (const json& item : value) into.push_back(item);
      } else if (value.is_boolean()) {
        into = into.is_null() ? value.get<bool>() : into.get<bool>() && value.get<bool>();
      }
    }
    progress.Update(++done);
  }
  return 0;
}

const char* kVerifyUsage = "verify [--sheet ID] [--json]";

int RunVerify(int argc, char** argv) {
  Flags flags(argc, argv, 2, {"json"});
  int code = 0;
  if (!ParseFlags(flags, 0, kVerifyUsage, &code)) return code;
  const std::optional<std::string> sheet = flags.Find("sheet");
  const bool as_json = flags.Bool("json");
  Client client(flags);
  if (RejectUnused(flags, kVerifyUsage, &code)) return code;

  json report = {{"ok", true},
                 {"sheets", 0},
                 {"violations", json::array()},
                 {"pending", json::array()}};
  code = ForEachSheet(
      client, sheet, "verify",
      [&](const std::string& id) {
        return client.Post("/v1/admin/verify", json{{"sheet", id}});
      },
      &report);
  if (code != 0) return code;
  const json& violations = report["violations"];
  // Pending: work the pipeline has not done yet (a busy server), not a failure.
  const json& pending = report["pending"];
  if (as_json) {
    std::printf("%s\n", report.dump(2).c_str());
  } else {
    for (const json& v : violations) {
      std::printf(
          "VIOLATION %s sheet %s: %s\n", v["invariant"].get<std::string>().c_str(),
          v["sheet"].get<std::string>().c_str(), v["detail"].get<std::string>().c_str());
    }
    for (const json& v : pending) {
      std::printf("PENDING %s sheet %s: %s\n", v["invariant"].get<std::string>().c_str(),
                  v["sheet"].get<std::string>().c_str(),
                  v["detail"].get<std::string>().c_str());
    }
    std::printf(
        "verified %lld sheets, %lld segments, %lld entries, %lld snapshots compared, "
        "%lld blobs checked: %zu violation%s",
        static_cast<long long>(report.value("sheets", 0)),
        static_cast<long long>(report.value("segments", 0)),
        static_cast<long long>(report.value("entries", 0)),
        static_cast<long long>(report.value("snapshots_compared", 0)),
        static_cast<long long>(report.value("blobs_checked", 0)), violations.size(),
        violations.size() == 1 ? "" : "s");
    if (!pending.empty()) {
      std::printf(", %zu pending (the pipeline has not finished them yet; not a failure)",
                  pending.size());
    }
    std::printf("\n");
  }
  return violations.empty() ? 0 : 1;
}

const char* kRebuildUsage = "rebuild-snapshots SHEET [--json]";

int RunRebuildSnapshots(int argc, char** argv) {
  Flags flags(argc, argv, 2, {"json"});
  int code = 0;
  if (!ParseFlags(flags, 1, kRebuildUsage, &code)) return code;
  if (flags.positional().empty())
    return Fail(std::string("usage: sheetlog ") + kRebuildUsage);
  const std::string sheet = flags.positional().front();
  const bool as_json = flags.Bool("json");
  Client client(flags);
  if (RejectUnused(flags, kRebuildUsage, &code)) return code;

  Client::Response r;
  {
    Progress progress("rebuild-snapshots", 0);
    progress.Update(0);
    r = client.Post("/v1/admin/sheets/" + sheet + "/rebuild-snapshots", json::object());
  }
  if (r.status != 200) return Fail(r.error);
  if (as_json) {
    std::printf("%s\n", r.body.dump(2).c_str());
  } else {
    for (const json& s : r.body["snapshots"]) {
      std::printf("seq %lld (segment %lld num %lld): %s%s%s\n",
                  static_cast<long long>(s["seq"].get<int64_t>()),
                  static_cast<long long>(s["segment"].get<int64_t>()),
                  static_cast<long long>(s["num"].get<int64_t>()),
                  s["outcome"].get<std::string>().c_str(),
                  s["detail"].get<std::string>().empty() ? "" : ": ",
                  s["detail"].get<std::string>().c_str());
    }
    std::printf(
        "rebuilt %zu snapshots of %s from %lld entries: %lld same, %lld repaired, "
        "%lld base, %lld failed\n",
        r.body["snapshots"].size(), sheet.c_str(),
        static_cast<long long>(r.body["entries"].get<int64_t>()),
        static_cast<long long>(r.body["same"].get<int64_t>()),
        static_cast<long long>(r.body["repaired"].get<int64_t>()),
        static_cast<long long>(r.body["base"].get<int64_t>()),
        static_cast<long long>(r.body["failed"].get<int64_t>()));
  }
  return r.body["failed"].get<int64_t>() == 0 ? 0 : 1;
}

const char* kReprocessUsage = "reprocess --since ISO-8601 [--sheet ID] [--json]";

int RunReprocess(int argc, char** argv) {
  Flags flags(argc, argv, 2, {"json"});
  int code = 0;
  if (!ParseFlags(flags, 0, kReprocessUsage, &code)) return code;
  const std::optional<std::string> since = flags.Find("since");
  const std::optional<std::string> sheet = flags.Find("sheet");
  const bool as_json = flags.Bool("json");
  Client client(flags);
  if (RejectUnused(flags, kReprocessUsage, &code)) return code;
  if (!since)
    return Fail(std::string("--since is required; usage: sheetlog ") + kReprocessUsage);

  json report = {{"sheets", 0}, {"actions", json::array()}};
  // Checked here too, so a bad time is refused even when there is no sheet to ask about.
  if (!ParseTimePoint(*since)) {
    return Fail(
        "--since must be ISO-8601 UTC (2026-01-01T00:00:00Z) or unix seconds, got '" +
        *since + "'");
  }
  code = ForEachSheet(
      client, sheet, "reprocess",
      [&](const std::string& id) {
        return client.Post("/v1/admin/reprocess", json{{"since", *since}, {"sheet", id}});
      },
      &report);
  if (code != 0) return code;
  if (as_json) {
    std::printf("%s\n", report.dump(2).c_str());
  } else {
    for (const json& action : report["actions"]) {
      std::printf("%s\n", action.get<std::string>().c_str());
    }
    std::printf(
        "reprocessed %lld sheets, %lld entries since %s: %lld snapshots enqueued, %lld "
        "blobs untagged\n",
        static_cast<long long>(report.value("sheets", 0)),
        static_cast<long long>(report.value("entries", 0)), since->c_str(),
        static_cast<long long>(report.value("snapshots_enqueued", 0)),
        static_cast<long long>(report.value("blobs_untagged", 0)));
  }
  return 0;
}

const char* kBackupUsage = "backup --to DIR [--json]";

// The server writes the backup (POST /v1/admin/backup): DIR is a directory of the
// server's machine, so it is made absolute here, where a relative one was meant.
int RunBackup(int argc, char** argv) {
  Flags flags(argc, argv, 2, {"json"});
  int code = 0;
  if (!ParseFlags(flags, 0, kBackupUsage, &code)) return code;
  const std::optional<std::string> to = flags.Find("to");
  const bool as_json = flags.Bool("json");
  Client client(flags);
  if (RejectUnused(flags, kBackupUsage, &code)) return code;
  if (!to || to->empty()) {
    return Fail(std::string("--to is required; usage: sheetlog ") + kBackupUsage);
  }
  std::error_code ec;
  const std::string target = std::filesystem::absolute(*to, ec).lexically_normal();
  // A large backup takes as long as its copy; the server answers when it is done.
  client.http().set_read_timeout(24 * 3600, 0);
  Client::Response r;
  {
    Progress progress("backup", 0);
    progress.Update(0);
    r = client.Post("/v1/admin/backup", json{{"to", target}});
  }
  if (r.status != 200) return Fail("backup failed: " + r.error);
  if (as_json) {
    std::printf("%s\n", r.body.dump(2).c_str());
  } else {
    std::printf(
        "backup %s in %s: database %lld bytes, %lld objects (%lld bytes): %lld copied "
        "(%lld bytes), %lld already there%s\n",
        r.body.value("id", "").c_str(), target.c_str(),
        static_cast<long long>(r.body["database"].value("bytes", int64_t{0})),
        static_cast<long long>(r.body.value("blobs", int64_t{0})),
        static_cast<long long>(r.body.value("blob_bytes", int64_t{0})),
        static_cast<long long>(r.body.value("blobs_copied", int64_t{0})),
        static_cast<long long>(r.body.value("bytes_copied", int64_t{0})),
        static_cast<long long>(r.body.value("blobs_reused", int64_t{0})),
        r.body.value("unreadable_blobs", int64_t{0}) > 0
            ? "; some objects have damaged metadata and were left out (run verify)"
            : "");
  }
  return r.body.value("unreadable_blobs", int64_t{0}) == 0 ? 0 : 1;
}

}  // namespace

constexpr const char* kForkUsage = "fork SOURCE [--at SEQ] [--name NAME] [--json]";

// POST /v1/sheets/{id}/fork: prints the new sheet's id (the whole answer with --json).
int RunFork(int argc, char** argv) {
  Flags flags(argc, argv, 2, {"json"});
  int code = 0;
  if (!ParseFlags(flags, 1, kForkUsage, &code)) return code;
  if (flags.positional().empty())
    return Fail(std::string("usage: sheetlog ") + kForkUsage);
  const std::string source = flags.positional().front();
  json body = json::object();
  if (std::optional<std::string> at = flags.Find("at")) {
    char* end = nullptr;
    const long long seq = std::strtoll(at->c_str(), &end, 10);
    if (at->empty() || *end != '\0' || seq < 0) {
      return Fail("--at must be a sequence number (an integer >= 0), not '" + *at + "'");
    }
    body["at"] = static_cast<int64_t>(seq);
  }
  if (std::optional<std::string> name = flags.Find("name")) body["name"] = *name;
  const bool as_json = flags.Bool("json");
  Client client(flags);
  if (RejectUnused(flags, kForkUsage, &code)) return code;
  Client::Response r = client.Post("/v1/sheets/" + source + "/fork", body);
  if (r.status != 201) return Fail(r.error);
  if (as_json) {
    std::printf("%s\n", r.body.dump(2).c_str());
  } else {
    std::printf("%s\n", r.body["id"].get<std::string>().c_str());
  }
  return 0;
}

std::vector<Command> OpsCommands() {
  return {
      {"fork",
       "fork SOURCE [--at SEQ] [--name NAME] a new sheet whose log is SOURCE's up to SEQ",
       RunFork,
       "Usage: sheetlog fork SOURCE [--at SEQ] [--name NAME] [--json]\n"
       "\n"
       "Forks a sheet: a new sheet with SOURCE's cells and history up to SEQ and a\n"
       "future of its own (POST /v1/sheets/{id}/fork). Prints the new sheet's id.\n"
       "Exit 2: a usage error, no server, or the server refused (the message says why).\n"
       "\n"
       "  SOURCE             the id of the sheet to fork\n"
       "  --at SEQ           the last seq the fork takes (default: the head)\n"
       "  --name NAME        the new sheet's name\n"
       "  --json             the new sheet as JSON instead of its id\n"},
      {"verify",
       "verify [--sheet ID] [--json]        check every invariant; exit 1 on a violation",
       RunVerify,
       "Usage: sheetlog verify [--sheet ID] [--json]\n"
       "\n"
       "Checks every invariant of the server's sheets (log, snapshots, blobs). Exit 0:\n"
       "none violated; 1: a violation (each is printed); 2: a usage error or no server.\n"
       "\n"
       "  --sheet ID         only this sheet (default: every sheet)\n"
       "  --json             one JSON report on stdout instead of a summary line\n"},
      {"rebuild-snapshots",
       "rebuild-snapshots SHEET [--json]    recreate every snapshot from the log and "
       "compare",
       RunRebuildSnapshots,
       "Usage: sheetlog rebuild-snapshots SHEET [--json]\n"
       "\n"
       "Recreates every snapshot of a sheet from its log and compares it with the "
       "stored\n"
       "one. Exit 1 if one could not be rebuilt; 2: a usage error or no server.\n"
       "\n"
       "  SHEET              the sheet's id\n"
       "  --json             one JSON report on stdout instead of a line per snapshot\n"},
      {"reprocess",
       "reprocess --since ISO [--sheet ID] [--json]  re-trigger lost side effects since "
       "then",
       RunReprocess,
       "Usage: sheetlog reprocess --since ISO-8601 [--sheet ID] [--json]\n"
       "\n"
       "Re-triggers the side effects (snapshots to build, blob tags) of the entries\n"
       "appended since a time, for effects a crash lost. Exit 2: a usage error or no\n"
       "server.\n"
       "\n"
       "  --since TIME       ISO-8601 UTC (2026-01-01T00:00:00Z) or unix seconds; "
       "required\n"
       "  --sheet ID         only this sheet (default: every sheet)\n"
       "  --json             one JSON report on stdout instead of a summary line\n"},
      {"backup",
       "backup --to DIR [--json]             copy the database and every blob, while "
       "serving",
       RunBackup,
       "Usage: sheetlog backup --to DIR [--json]\n"
       "\n"
       "Has the server copy its database and every blob into DIR while it serves\n"
       "(restore it with `sheetlog restore`). Exit 1 if some objects were left out;\n"
       "2: a usage error, no server, or the backup failed.\n"
       "\n"
       "  --to DIR           the backup directory, on the server's machine (a relative\n"
       "                     path is made absolute here); required\n"
       "  --json             the server's JSON report on stdout instead of a summary\n"},
  };
}

}  // namespace sheetlog::cli
