#!/usr/bin/env bash
# Seeded starts (bench/README.md "Forks and seeds"): `sheetlog serve --seed DIR` with
# DIR = 100 CSV files of 1,000 cells each (100 rows x 10 columns of numbers and short
# text), timed from the process's start to the first 200 from /readyz, in memory and
# on an empty data directory, 5 starts each, against a Release build.
# Usage: bench/http/seed.sh [path/to/sheetlog] [starts]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/release/sheetlog}
STARTS=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work/seed" <<'PY'
import os, sys
root = sys.argv[1]; os.makedirs(root)
for s in range(100):
    with open(os.path.join(root, "sheet%03d.csv" % s), "w") as f:
        for r in range(100):
            f.write(",".join(str(r * 10 + c) if c % 2 else "t%d-%d" % (r, c) for c in range(10)) + "\n")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$BIN" "$work" "$STARTS" <<'PY'
import os, shutil, socket, statistics, subprocess, sys, time, urllib.request
binary, work, starts = sys.argv[1], sys.argv[2], int(sys.argv[3])
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
for mode in ("in-memory", "data-dir"):
    times = []
    for k in range(starts):
        port = free_port()
        args = [binary, "serve", "--listen", "127.0.0.1:%d" % port, "--seed", work + "/seed",
                "--log-level", "warn"]
        data = os.path.join(work, "data%d" % k)
        args += ["--in-memory"] if mode == "in-memory" else ["--data-dir", data]
        t = time.perf_counter()
        p = subprocess.Popen(args)
        while True:
            try:
                if urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=1).status == 200:
                    break
            except Exception:
                time.sleep(0.002)
        times.append((time.perf_counter() - t) * 1000)
        p.terminate(); p.wait()
        shutil.rmtree(data, ignore_errors=True)
    print("%-9s: start to /readyz p50 %.0f ms, min %.0f, max %.0f (%d starts; 100 sheets x 1,000 cells)"
          % (mode, statistics.median(times), min(times), max(times), starts))
PY
