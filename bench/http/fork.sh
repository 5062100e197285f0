#!/usr/bin/env bash
# Forks (bench/README.md "Forks and seeds"): POST /v1/sheets/{id}/fork at the head of a
# sheet of N entries whose last snapshot is 10 entries behind the head (what a fork
# copies: the entries since that snapshot), timed one request at a time over one
# keep-alive connection, for N = 10^3, 10^4, 10^5, against a Release build serving
# in memory (SQLite in memory, blobs in a scratch directory).
# Usage: bench/http/fork.sh [path/to/sheetlog] [forks per size]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/release/sheetlog}
FORKS=${2:-50}
source bench/http/serve.sh
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$PORT" "$FORKS" <<'PY'
import http.client, json, statistics, sys, time
port, forks = int(sys.argv[1]), int(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port)
def call(method, path, body=None):
    c.request(method, path, None if body is None else json.dumps(body))
    r = c.getresponse(); data = r.read()
    return r.status, (json.loads(data) if data else None)
for n in (1000, 10000, 100000):
    status, sheet = call("POST", "/v1/sheets", {"snapshot_every": 0})
    sid = sheet["id"]
    def append(i):
        s, _ = call("POST", "/v1/sheets/%s/entries" % sid,
                    {"type": "SetCell", "body": {"ref": "%s%d" % ("ABCDEFGHIJ"[i % 10], i % 1000 + 1), "value": i}})
        assert s == 201, s
    for i in range(n - 11):
        append(i)
    s, snap = call("POST", "/v1/sheets/%s/snapshots" % sid)
    assert s == 201, s
    while True:
        s, listed = call("GET", "/v1/sheets/%s/snapshots" % sid)
        if all(x["state"] == "completed" for x in listed["snapshots"]):
            break
        time.sleep(0.05)
    for i in range(10):
        append(n + i)
    times = []
    for k in range(forks):
        t = time.perf_counter()
        s, fork = call("POST", "/v1/sheets/%s/fork" % sid, {"name": "f%d" % k})
        times.append((time.perf_counter() - t) * 1000)
        assert s == 201, (s, fork)
    times.sort()
    print("entries %6d: fork p50 %.2f ms, p90 %.2f ms, max %.2f ms (%d forks, first_seq %d, next_seq %d)"
          % (n, statistics.median(times), times[int(len(times) * 0.9) - 1], times[-1], forks,
             fork["first_seq"], fork["next_seq"]))
PY
