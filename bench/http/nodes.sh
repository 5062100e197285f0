#!/usr/bin/env bash
# Appends through N sheetlog nodes sharing one PostgreSQL database (bench/README.md
# "Appends on PostgreSQL"): N servers with --store on one fresh database, one sheet with
# snapshot_every 0, wrk keep-alive appends (one SetCell each) at 8 connections per node,
# all nodes at once on the same sheet. Prints appends/s (all nodes), the responses that
# were not 201 (a 503 "contention" is the honest refusal when the retries ran out), the
# sheet's entries before and after (acknowledged appends must all be there), and the
# CPU per acknowledged append of the nodes and of PostgreSQL's processes.
# Usage: bench/http/nodes.sh CONNINFO [path/to/sheetlog] [nodes] [seconds]
#   CONNINFO: the server's `postgres` database (scripts/postgres start DIR writes it to
#   DIR/conninfo); a database of its own is created for the run.
set -euo pipefail
cd "$(dirname "$0")/../.."
ADMIN=$1
BIN=${2:-build/release/sheetlog}
NODES=${3:-3}
SECONDS_PER_RUN=${4:-6}
DB="bench_nodes_$$"
psql "$ADMIN" -qc "CREATE DATABASE $DB" >/dev/null
STORE="$ADMIN dbname=$DB"
PIDS=()
URLS=()
DIRS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "${DIRS[@]}"
  psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null || true
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)"
for ((n = 0; n < NODES; n++)); do
  dir=$(mktemp -d)
  DIRS+=("$dir")
  mkfifo "$dir/port"
  "$BIN" serve --data-dir "$dir" --store "$STORE" --listen 127.0.0.1:0 \
    --port-file "$dir/port" --log-level warn &
  PIDS+=($!)
  URLS+=("http://127.0.0.1:$(head -1 "$dir/port")")
done
# BENCH_SHEETS sheets (default 1: every node on the same sheet, the contended case).
SHEET_COUNT=${BENCH_SHEETS:-1}
SHEETS=""
for ((i = 0; i < SHEET_COUNT; i++)); do
  id=$(curl -s -XPOST "${URLS[0]}/v1/sheets" -d '{"snapshot_every":0}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  SHEETS="$SHEETS${SHEETS:+,}$id"
done
export SHEET=${SHEETS%%,*} SHEETS
SCRIPT=bench/http/append.lua
[ "$SHEET_COUNT" -gt 1 ] && SCRIPT=bench/http/append_sheets.lua
# The sum of the sheets' next_seq: every acknowledged append is there.
next_seq() {
  local total=0 id
  for id in ${SHEETS//,/ }; do
    total=$((total + $(curl -s "${URLS[0]}/v1/sheets/$id" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["next_seq"])')))
  done
  echo $total
}
before=$(next_seq)
load=$(cut -d' ' -f1 /proc/loadavg)
STAT=$(mktemp)
perf stat -e task-clock -p "$(IFS=,; echo "${PIDS[*]}")" -o "$STAT" &
PERF=$!
perf stat -e task-clock -p "$(pgrep -d, -x postgres)" -o "$STAT.pg" &
PG_PERF=$!
OUTS=()
WRKS=()
# BENCH_STICKY=1: each node appends to its own share of the sheets (sheet i to node
# i mod N), as behind a load balancer that routes by sheet; otherwise every node
# appends to every sheet (the contended case).
IFS=, read -r -a SHEET_LIST <<<"$SHEETS"
for ((n = 0; n < NODES; n++)); do
  node_sheets=$SHEETS
  if [ "${BENCH_STICKY:-0}" = 1 ]; then
    node_sheets=""
    for ((i = n; i < SHEET_COUNT; i += NODES)); do
      node_sheets="$node_sheets${node_sheets:+,}${SHEET_LIST[$i]}"
    done
  fi
  out=$(mktemp)
  OUTS+=("$out")
  SHEETS=$node_sheets SHEET=${node_sheets%%,*} \
    wrk -t1 -c8 -d"${SECONDS_PER_RUN}s" -s $SCRIPT "${URLS[$n]}" >"$out" &
  WRKS+=($!)
done
wait "${WRKS[@]}"
kill -INT $PERF $PG_PERF
wait $PERF $PG_PERF 2>/dev/null || true
after=$(next_seq)
requests=0
non2xx=0
for out in "${OUTS[@]}"; do
  r=$(awk '/requests in/ {print $1}' "$out")
  e=$(awk '/Non-2xx/ {print $5}' "$out")
  requests=$((requests + r))
  non2xx=$((non2xx + ${e:-0}))
  rm -f "$out"
done
ms=$(awk '/task-clock/ {gsub(",","",$1); print $1}' "$STAT")
pg_ms=$(awk '/task-clock/ {gsub(",","",$1); print $1}' "$STAT.pg")
rm -f "$STAT" "$STAT.pg"
python3 -c "
acked = $after - $before
print('nodes=$NODES sheets=$SHEET_COUNT sticky=${BENCH_STICKY:-0}: %d requests, %d acknowledged (%.0f/s), %d not 201; nodes %.0f us and PostgreSQL %.0f us CPU per acknowledged append; load $load'
      % ($requests, acked, acked / $SECONDS_PER_RUN, $non2xx, $ms * 1000 / max(acked, 1), $pg_ms * 1000 / max(acked, 1)))
# wrk counts only the responses it read before it stopped; a request in flight then may
# still commit (at most one per connection). None answered 201 may be missing.
extra = acked - ($requests - $non2xx)
print('answered 201 and stored: %s; stored beyond those wrk counted: %d (at most %d in flight)'
      % ('all' if extra >= 0 else 'NOT ALL', extra, 8 * $NODES))
"
# BENCH_WAKE=1: then the latency from an append acknowledged by node 1 to node 2's event
# stream carrying it (bench/http/wake_latency.py), with the nodes idle otherwise.
if [ "${BENCH_WAKE:-0}" = 1 ] && [ "$NODES" -ge 2 ]; then
  python3 bench/http/wake_latency.py "${URLS[0]}" "${URLS[1]}" 200
fi
