#!/usr/bin/env bash
# Reads at the head (bench/README.md "Reads at the head"): GET .../cells of a 20x10
# range on a client-managed sheet (snapshot_every 0) whose only snapshot is 10,000
# entries behind the head, with wrk at 1 and 16 keep-alive connections, against a
# Release build in an in-memory server. Then the same while a writer appends.
# Usage: bench/http/read_head.sh [path/to/sheetlog] [seconds per run] [entries]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/release/sheetlog}
SECONDS_PER_RUN=${2:-10}
ENTRIES=${3:-10000}
source bench/http/serve.sh
# Entry 0 (the empty sheet's snapshot) completes; everything after it is replayed.
python3 - "$PORT" "$SHEET" "$ENTRIES" <<'PY'
import http.client, json, sys
port, sheet, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
for i in range(n):
    body = {"type": "SetCell",
            "body": {"ref": "%s%d" % ("ABCDEFGHIJ"[i % 10], i % 40 + 1), "value": i}}
    c.request("POST", "/v1/sheets/%s/entries" % sheet, json.dumps(body))
    r = c.getresponse(); r.read()
    assert r.status == 201, r.status
PY
CELLS="$URL/v1/sheets/$SHEET/cells?range=A1:J20"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
curl -s -D - -o /dev/null "$CELLS" | grep -i "x-entries-applied\|x-snapshot-seq" | tr -d '\r'
for connections in 1 16; do
  threads=2
  [ "$connections" -lt 2 ] && threads=1
  out=$(wrk -t$threads -c$connections -d${SECONDS_PER_RUN}s --latency "$CELLS")
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
  p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
  echo "cells c=$connections: $rps req/s p50 $p50 p99 $p99"
done
# Reads while one client appends (each read then carries the view over new entries).
export SHEET
wrk -t1 -c1 -d${SECONDS_PER_RUN}s -s bench/http/append.lua "$URL" >/tmp/read_head_writer.txt &
WRITER=$!
out=$(wrk -t2 -c16 -d${SECONDS_PER_RUN}s --latency "$CELLS")
wait $WRITER
echo "cells c=16 with 1 writer: $(echo "$out" | awk '/Requests\/sec/ {print $2}') req/s" \
  "p99 $(echo "$out" | awk '$1 == "99%" {print $2}');" \
  "writer $(awk '/Requests\/sec/ {print $2}' /tmp/read_head_writer.txt) appends/s"
curl -s "$URL/metrics" | grep "^sheetlog_head_view" || true
echo "server RSS: $(awk '/VmHWM/ {print $2, $3}' /proc/$SERVER/status) peak"
