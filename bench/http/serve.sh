# Sourced by the HTTP benchmarks: starts `$BIN serve --in-memory` on a free port,
# stops it on exit, and sets SERVER (pid), URL and SHEET (a new sheet with
# snapshot_every 0).
PORT_FILE=$(mktemp -u)
mkfifo "$PORT_FILE"
ulimit -n "$(ulimit -Hn)"
# SHEETLOG_BENCH_STORE (a --store value: a PostgreSQL database) puts the tables there.
STORE_ARGS=()
[ -n "${SHEETLOG_BENCH_STORE:-}" ] && STORE_ARGS=(--store "$SHEETLOG_BENCH_STORE")
"$BIN" serve --in-memory --listen 127.0.0.1:0 --port-file "$PORT_FILE" \
  --log-level warn "${STORE_ARGS[@]}" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -f "$PORT_FILE"' EXIT
PORT=$(head -1 "$PORT_FILE")
URL="http://127.0.0.1:$PORT"
SHEET=$(curl -s -XPOST "$URL/v1/sheets" -d '{"snapshot_every":0}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
