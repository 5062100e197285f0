#!/usr/bin/env bash
# Appends over HTTP at default durability (bench/README.md "Appends: CPU and context
# switches per append"): a server on a fresh data directory (--sync normal, the
# default), one sheet with snapshot_every 0, wrk keep-alive appends (one SetCell each)
# at 1 and 16 connections on one sheet and at 16 connections over 16 sheets; for each: appends/s, p50/p99, and the server's CPU time and
# context switches per append (perf stat over the run, warm-up excluded), with the load
# average. Then 16 connections appending with expect_seq (bench/http/append_expect.lua:
# each wrk thread sends the next seq its connections last learned, from a 201 or a 409)
# and the acknowledged appends per second (next_seq before and after).
# With SHEETLOG_BENCH_STORE set (a --store value: a PostgreSQL database), the tables are
# there, and the CPU of the PostgreSQL server's processes per append is measured too.
# Usage: bench/http/appends.sh [path/to/sheetlog] [seconds per run]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/release/sheetlog}
SECONDS_PER_RUN=${2:-8}
DATA=$(mktemp -d)
PORT_FILE=$(mktemp -u)
mkfifo "$PORT_FILE"
ulimit -n "$(ulimit -Hn)"
STORE=${SHEETLOG_BENCH_STORE:-}
STORE_ARGS=()
[ -n "$STORE" ] && STORE_ARGS=(--store "$STORE")
"$BIN" serve --data-dir "$DATA" --listen 127.0.0.1:0 --port-file "$PORT_FILE" \
  --log-level warn "${STORE_ARGS[@]}" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$PORT_FILE" "$DATA"' EXIT
PORT=$(head -1 "$PORT_FILE")
URL="http://127.0.0.1:$PORT"
new_sheet() {
  curl -s -XPOST "$URL/v1/sheets" -d '{"snapshot_every":0}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}
next_seq() {
  curl -s "$URL/v1/sheets/$SHEET" | python3 -c 'import json,sys; print(json.load(sys.stdin)["next_seq"])'
}
STAT=$(mktemp)
SHEETS=""
for ((i = 0; i < 16; i++)); do SHEETS="$SHEETS${SHEETS:+,}$(new_sheet)"; done
export SHEETS
# The database's sessions waiting on a lock or on I/O, sampled while the 16-sheet run
# goes (PostgreSQL only): a lock held across another's commit shows as Lock waits.
sample_waits() {
  sleep $((SECONDS_PER_RUN / 2))
  psql "$STORE" -XAtc "SELECT wait_event_type || ':' || wait_event, state, count(*)
    FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
    AND state <> 'idle' GROUP BY 1, 2 ORDER BY 3 DESC" 2>&1 | sed 's/^/  pg_stat_activity: /'
}
for run in "1 1" "16 1" "16 16"; do
  read -r connections sheets <<<"$run"
  export SHEET
  SHEET=$(new_sheet)
  script=bench/http/append.lua
  [ "$sheets" -gt 1 ] && script=bench/http/append_sheets.lua
  threads=2
  [ "$connections" -lt 2 ] && threads=1
  wrk -t$threads -c$connections -d1s -s $script "$URL" >/dev/null
  load=$(cut -d' ' -f1 /proc/loadavg)
  perf stat -e context-switches,task-clock -p $SERVER -o "$STAT" &
  PERF=$!
  if [ -n "$STORE" ]; then
    perf stat -e task-clock -p "$(pgrep -d, -x postgres)" -o "$STAT.pg" &
    PG_PERF=$!
  fi
  SAMPLER=""
  if [ -n "$STORE" ] && [ "$sheets" -gt 1 ]; then
    sample_waits &
    SAMPLER=$!
  fi
  out=$(wrk -t$threads -c$connections -d${SECONDS_PER_RUN}s --latency -s $script "$URL")
  [ -n "$SAMPLER" ] && wait $SAMPLER
  kill -INT $PERF
  wait $PERF || true
  pg_note=""
  if [ -n "$STORE" ]; then
    kill -INT $PG_PERF
    wait $PG_PERF || true
    pg_ms=$(awk '/task-clock/ {gsub(",","",$1); print $1}' "$STAT.pg")
  fi
  requests=$(echo "$out" | awk '/requests in/ {print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
  p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
  cs=$(awk '/context-switches/ {gsub(",","",$1); print $1}' "$STAT")
  ms=$(awk '/task-clock/ {gsub(",","",$1); print $1}' "$STAT")
  [ -n "$STORE" ] && pg_note=$(python3 -c "print('; PostgreSQL %.0f us CPU per append' % ($pg_ms * 1000 / $requests))")
  python3 -c "print('appends c=$connections sheets=$sheets: $rps/s p50 $p50 p99 $p99; server %.0f us CPU and %.1f context switches per append$pg_note; load $load' % ($ms * 1000 / $requests, $cs / $requests))"
done
SHEET=$(new_sheet)
export SHEET
load=$(cut -d' ' -f1 /proc/loadavg)
before=$(next_seq)
out=$(wrk -t2 -c16 -d${SECONDS_PER_RUN}s -s bench/http/append_expect.lua "$URL")
after=$(next_seq)
rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
python3 -c "print('expect_seq c=16: $rps requests/s, %.0f acknowledged/s; load $load' % (($after - $before) / $SECONDS_PER_RUN))"
rm -f "$STAT" "$STAT.pg"
