#!/usr/bin/env bash
# Peer comparison (bench/README.md "Peer comparison: dynalite vs sheetlog"):
# seed 001's add entry with N concurrent clients in one Node process,
#   - against dynalite (the npm DynamoDB emulator) through the AWS SDK v3: conditional
#     PutItem at the client's next seq, attribute_not_exists(Num); on
#     ConditionalCheckFailed, backoff with full jitter, Query the head, retry; in memory
#     and with its LevelDB store on disk, plus (in memory) the seed's steps literally, a
#     Query before every PutItem;
#   - against sheetlog's HTTP API, the same clients: POST .../entries with expect_seq; on
#     409, the same backoff, retry at the 409's next_seq; then the unconditional append
#     (no expect_seq).
# Scenarios: 1 client on one sheet, 16 clients on one sheet, 16 clients each on its own
# sheet. The three servers run side by side (idle while another is measured) and each
# scenario is measured on every system in turn, so that a row of the table is measured
# within a minute or two on a machine whose load others change. Prints acknowledged appends/s, p50/p99 of an acknowledged append (retries
# included), conflicts, server and client CPU per append, the load average before and
# after each run, and a Markdown table side by side. Not part of CI: `npm ci` downloads
# dynalite and the SDK from the npm registry (bench/peers/package-lock.json).
# Usage: bench/peers/run.sh [path/to/sheetlog] [seconds per run]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/release/sheetlog}
SECONDS_PER_RUN=${2:-8}
PEERS=bench/peers
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "run.sh: needs node (>= 20) and npm" >&2
  exit 2
fi
[ -x "$BIN" ] || { echo "run.sh: no sheetlog binary at $BIN" >&2; exit 2; }

# npm ci when node_modules is missing or older than the lock file.
if [ ! -f $PEERS/node_modules/.package-lock.json ] ||
   [ $PEERS/package-lock.json -nt $PEERS/node_modules/.package-lock.json ]; then
  (cd $PEERS && npm ci --no-audit --no-fund)
fi

WORK=$(mktemp -d)
SERVERS=()
stop_servers() {
  local pid
  for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${SERVERS[@]}"; do wait "$pid" 2>/dev/null || true; done
  SERVERS=()
}
trap 'stop_servers; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# Each sets PID and PORT of the server it started.
# $1: a LevelDB directory, or empty for dynalite's in-memory store.
start_dynalite() {
  local fifo
  fifo=$(mktemp -u "$WORK/port.XXXXXX")
  mkfifo "$fifo"
  node $PEERS/dynalite-server.js --port-file "$fifo" ${1:+--path "$1"} &
  PID=$!
  SERVERS+=("$PID")
  PORT=$(timeout 30 head -1 "$fifo")
}
# As bench/http/appends.sh: a fresh data directory on disk, default durability.
start_sheetlog() {
  local fifo data
  fifo=$(mktemp -u "$WORK/port.XXXXXX")
  mkfifo "$fifo"
  data=$(mktemp -d "$WORK/sheetlog.XXXXXX")
  "$BIN" serve --data-dir "$data" --listen 127.0.0.1:0 --port-file "$fifo" \
    --log-level warn &
  PID=$!
  SERVERS+=("$PID")
  PORT=$(timeout 30 head -1 "$fifo")
}
RESULTS=$WORK/results.jsonl
# $1: PID, $2: PORT of the server, then bench.js's options.
bench() {
  local pid=$1 port=$2
  shift 2
  node $PEERS/bench.js run --endpoint "http://127.0.0.1:$port" --server-pid "$pid" \
    --seconds "$SECONDS_PER_RUN" --out "$RESULTS" "$@"
}

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); nproc: $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "node $(node --version); dynalite $(node -p "require('./$PEERS/node_modules/dynalite/package.json').version");" \
  "@aws-sdk/client-dynamodb $(node -p "require('./$PEERS/node_modules/@aws-sdk/client-dynamodb/package.json').version");" \
  "sheetlog $BIN"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

start_dynalite ""
MEMORY=("$PID" "$PORT")
start_dynalite "$WORK/leveldb"
DISK=("$PID" "$PORT")
start_sheetlog
SHEETLOG=("$PID" "$PORT")
for scenario in one-1 one-16 own-16; do
  bench "${MEMORY[@]}" --scenarios $scenario --target dynalite --mode tracked \
    --label "dynalite, memory"
  bench "${DISK[@]}" --scenarios $scenario --target dynalite --mode tracked \
    --label "dynalite, LevelDB on disk"
  bench "${MEMORY[@]}" --scenarios $scenario --target dynalite --mode seed \
    --label "dynalite, memory, Query before each Put"
  bench "${SHEETLOG[@]}" --scenarios $scenario --target sheetlog --mode tracked \
    --label "sheetlog, expect_seq"
  bench "${SHEETLOG[@]}" --scenarios $scenario --target sheetlog --mode unconditional \
    --label "sheetlog, no expect_seq"
done
stop_servers

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
node $PEERS/bench.js report "$RESULTS"
