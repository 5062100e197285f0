#!/usr/bin/env bash
# Ordinary requests with and without 200 open event streams (bench/README.md "Event
# streams"): wrk at 16 keep-alive connections on GET /readyz, GET /v1/sheets/{id} and
# appends (POST .../entries, one SetCell), first with no stream open, then with 200
# GET .../events streams open over 4 sheets (50 of them on the sheet the appends go
# to, so every append is also sent to 50 streams), read by one Python process that
# drains them all. Release build, in-memory server.
# Usage: bench/http/streams.sh [path/to/sheetlog] [seconds per run]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/release/sheetlog}
SECONDS_PER_RUN=${2:-8}
source bench/http/serve.sh
export SHEET
OTHERS=()
for _ in 1 2 3; do
  OTHERS+=("$(curl -s -XPOST "$URL/v1/sheets" -d '{"snapshot_every":0}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')")
done

run() {  # $1: label
  for target in readyz sheet append; do
    case $target in
      readyz) out=$(wrk -t2 -c16 -d${SECONDS_PER_RUN}s --latency "$URL/readyz") ;;
      sheet) out=$(wrk -t2 -c16 -d${SECONDS_PER_RUN}s --latency "$URL/v1/sheets/$SHEET") ;;
      append) out=$(wrk -t2 -c16 -d${SECONDS_PER_RUN}s --latency \
        -s bench/http/append.lua "$URL") ;;
    esac
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    errors=$(echo "$out" | awk '/Socket errors|Non-2xx/ {printf "%s ", $0}')
    echo "$1 $target c=16: $rps req/s p50 $p50 p99 $p99 ${errors:-no errors}"
  done
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
run "no streams:"
STATS=$(mktemp)
python3 - "$PORT" "$STATS" "$SHEET" "${OTHERS[@]}" <<'PY' &
import selectors, signal, socket, sys
port, stats, sheets = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
sel = selectors.DefaultSelector()
conns = []
for i in range(200):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(("GET /v1/sheets/%s/events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" %
               (sheets[i % len(sheets)], port)).encode())
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, i)
    conns.append(s)
received = [0] * 200
entries = [0] * 200
closed = 0
def stop(*_):
    with open(stats, "w") as f:
        f.write("streams open %d of 200, %d MB received, %d entry events, "
                "overflows %d, refused %d\n" % (200 - closed, sum(received) >> 20,
                                                 sum(entries), overflow, refused))
    sys.exit(0)
overflow = 0
refused = 0
signal.signal(signal.SIGTERM, stop)
with open(stats + ".ready", "w") as f:
    f.write("ok")
while True:
    for key, _ in sel.select():
        data = key.fileobj.recv(1 << 16)
        if not data:
            sel.unregister(key.fileobj)
            closed += 1
            continue
        if received[key.data] == 0 and not data.startswith(b"HTTP/1.1 200"):
            refused += 1
        received[key.data] += len(data)
        entries[key.data] += data.count(b"event: entry")
        overflow += data.count(b"event: overflow")
PY
HOLDER=$!
while [ ! -s "$STATS.ready" ]; do sleep 0.1; done
sleep 1
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
run "200 streams:"
kill -TERM $HOLDER
wait $HOLDER || true
cat "$STATS"
rm -f "$STATS" "$STATS.ready"
echo "server RSS: $(awk '/VmHWM/ {print $2, $3}' /proc/$SERVER/status) peak"
