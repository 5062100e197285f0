#!/usr/bin/env bash
# Slow readers against the server (bench/README.md "HTTP front end"): a 48 MiB blob,
# then N connections (default 64, the default --threads) that each GET it and never
# read a byte, held open for the whole run; meanwhile /healthz is asked every 200 ms
# on fresh connections, and its latency is recorded (timeout 5 s each). Prints the
# /healthz latencies (p50, max, timeouts) and the server's RSS and threads at the end.
# Usage: bench/http/slow_readers.sh [path/to/sheetlog] [seconds] [connections]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/release/sheetlog}
SECONDS_RUN=${2:-30}
CONNECTIONS=${3:-64}
DATA=$(mktemp -d)
PORT_FILE=$(mktemp -u)
mkfifo "$PORT_FILE"
ulimit -n "$(ulimit -Hn)"
"$BIN" serve --data-dir "$DATA" --listen 127.0.0.1:0 --port-file "$PORT_FILE" \
  --log-level warn &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$PORT_FILE" "$DATA"' EXIT
PORT=$(head -1 "$PORT_FILE")
head -c $((48 << 20)) /dev/urandom | curl -s -o /dev/null -XPUT --data-binary @- \
  "http://127.0.0.1:$PORT/v1/blobs/bench/big"
python3 - "$PORT" "$SECONDS_RUN" "$CONNECTIONS" "$SERVER" <<'PY'
import socket, sys, time, statistics
port, seconds, count, pid = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
stalled = []
for _ in range(count):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET /v1/blobs/bench/big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    stalled.append(s)
latencies, timeouts = [], 0
end = time.time() + seconds
while time.time() < end:
    start = time.time()
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(4096)
            if not chunk: break
            data += chunk
        c.close()
        if data.startswith(b"HTTP/1.1 200"):
            latencies.append((time.time() - start) * 1000)
        else:
            timeouts += 1
    except OSError:
        timeouts += 1
    time.sleep(max(0, 0.2 - (time.time() - start)))
status = open(f"/proc/{pid}/status").read()
rss = [l for l in status.splitlines() if l.startswith("VmRSS")][0].split()[1]
threads = [l for l in status.splitlines() if l.startswith("Threads")][0].split()[1]
lat = sorted(latencies)
p50 = lat[len(lat)//2] if lat else float("nan")
print(f"{count} stalled readers, {seconds:.0f} s: /healthz answered {len(lat)}, "
      f"timed out or failed {timeouts}; p50 {p50:.1f} ms, max {max(lat) if lat else float('nan'):.1f} ms; "
      f"server RSS {int(rss)//1024} MiB, {threads} threads")
PY
