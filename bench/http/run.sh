#!/usr/bin/env bash
# HTTP front-end benchmark (bench/README.md "HTTP server"): GET /readyz and appends
# (POST .../entries, one SetCell, a sheet with snapshot_every 0) with wrk at 1, 16, 64,
# 128 and 1,000 keep-alive connections, against a Release build in an in-memory server.
# Usage: bench/http/run.sh [path/to/sheetlog] [seconds per run]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/release/sheetlog}
SECONDS_PER_RUN=${2:-10}
source bench/http/serve.sh
export SHEET
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for target in readyz append; do
  for connections in 1 16 64 128 1000; do
    threads=2
    [ "$connections" -lt 2 ] && threads=1
    if [ "$target" = readyz ]; then
      out=$(wrk -t$threads -c$connections -d${SECONDS_PER_RUN}s --latency "$URL/readyz")
    else
      out=$(wrk -t$threads -c$connections -d${SECONDS_PER_RUN}s --latency \
        -s bench/http/append.lua "$URL")
    fi
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    errors=$(echo "$out" | awk '/Socket errors|Non-2xx/ {printf "%s ", $0}')
    echo "$target c=$connections: $rps req/s p50 $p50 p99 $p99 ${errors:-no errors}"
  done
done
echo "server RSS: $(awk '/VmHWM/ {print $2, $3}' /proc/$SERVER/status) peak"
