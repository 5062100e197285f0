#!/usr/bin/env python3
"""Smoke test of scripts/cluster: three nodes behind haproxy, one killed and brought back.

Usage: tests/cluster_smoke.py [path/to/sheetlog]   (ctest: cluster_smoke)

Starts a cluster (scripts/cluster start, free ports, a temporary directory), creates a
sheet and appends through the load balancer, reads it back through each node directly,
kills one node with kill -9 and keeps appending through the balancer, brings the node
back, and stops everything. Fails on any lost, duplicated or misordered append, on a
node that reads differently, on a violation `sheetlog verify` finds, on a failed request
once haproxy has taken the dead node out (or before the kill, or after it is back), and
on a process left running after stop.

The client is honest about what a client of a load balancer sees: each append is tried
at most 3 times; an attempt that failed without an answer from a node (no connection,
502/503/504 from haproxy) might still have been committed, so before trying again the
client reads the log for its entry (every append writes a cell of its own) instead of
writing it twice. Between the kill and haproxy's health check taking the node out
(2 checks 1 s apart), haproxy itself retries a request it could not connect with on
another node (`option redispatch`), so even there the client should see no failure; the
test counts what it saw there and prints it, and asserts only that every append landed
exactly once. The client sends one request at a time, so none is in flight on the node
at the instant it dies.

Exit 77 (ctest's SKIP_RETURN_CODE) when haproxy is not installed (scripts/deps cluster).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, "scripts", "cluster")
ATTEMPTS = 3


def request(method, url, body=None, timeout=15):
    """(status, parsed JSON or text); status None when no HTTP answer came."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data else {}
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            text = response.read().decode()
            is_json = response.headers.get_content_type() == "application/json"
            return response.status, json.loads(text) if is_json else text
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as error:
        return None, str(error)


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


class Cluster:
    def __init__(self, directory, binary):
        self.dir = directory
        self.env = dict(os.environ, SHEETLOG_BIN=binary, SHEETLOG_CLUSTER_PORT="0")

    def run(self, *args):
        started = time.monotonic()
        done = subprocess.run([CLUSTER, *args, self.dir], env=self.env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        elapsed = time.monotonic() - started
        print(f"$ scripts/cluster {' '.join(args)}  ({elapsed:.1f} s)\n{done.stdout}",
              end="", flush=True)
        expect(done.returncode == 0, f"scripts/cluster {args[0]} exited {done.returncode}")
        return elapsed

    def settings(self):
        with open(os.path.join(self.dir, "cluster.env")) as f:
            return dict(line.strip().split("=", 1) for line in f if "=" in line)

    def pids(self):
        found = {}
        for name in ["haproxy.pid", "node1/pid", "node2/pid", "node3/pid", "s3/pid",
                     "postgres/pid"]:
            try:
                with open(os.path.join(self.dir, name)) as f:
                    found[name] = int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        return found

    def logs_tail(self):
        for name in ["haproxy.log", "node1/log", "node2/log", "node3/log", "s3/log"]:
            path = os.path.join(self.dir, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    lines = f.readlines()[-15:]
                print(f"--- {path} (last lines)\n{''.join(lines)}", end="")


def running(pid):
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Balancer:
    """haproxy's view of the nodes, from its statistics page (CSV)."""

    def __init__(self, stats_port):
        self.url = f"http://127.0.0.1:{stats_port}/;csv"

    def servers(self):
        status, text = request("GET", self.url)
        expect(status == 200, f"haproxy's statistics: {status} {text}")
        header = text.splitlines()[0].lstrip("# ").split(",")
        rows = [dict(zip(header, line.split(","))) for line in text.splitlines()[1:]]
        return {r["svname"]: r for r in rows
                if r.get("pxname") == "nodes" and r["svname"].startswith("node")}

    def state(self, node):
        return self.servers()[node]["status"]

    def sessions(self, node):
        return int(self.servers()[node]["stot"])

    def redispatched(self):
        return sum(int(r["wredis"] or 0) for r in self.servers().values())

    def wait_for(self, node, state, step, seconds=30):
        """Until haproxy's checks mark `node` `state`. haproxy announces nothing, so each
        look is paced by `step`, a real request through the balancer (its own round
        trip), as the kill window below is paced by appends: no sleep."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.state(node) == state:
                return
            step()
        raise AssertionError(f"haproxy did not mark {node} {state} within {seconds} s")


def read_entries(sheet_url):
    """Every entry of the sheet, page by page; None if a page could not be read."""
    entries, start = [], 1
    while True:
        status, page = request("GET", f"{sheet_url}/entries?from={start}&limit=1000")
        if status != 200:
            return None
        entries += page["entries"]
        if page["complete"]:
            return entries
        start = page["next"]


class Appender:
    """One client appending SetCell A<i> = i through the balancer, i = 1, 2, ..."""

    def __init__(self, url, sheet):
        self.url, self.sheet = url, sheet
        self.next = 1
        self.requests = 0
        self.failed = []  # (i, attempt, status, answer) of every attempt not answered 201

    def find(self, i):
        entries = read_entries(f"{self.url}/v1/sheets/{self.sheet}")
        for entry in entries or []:
            if entry["type"] == "SetCell" and entry["body"]["ref"] == f"A{i}":
                return entry["seq"]
        return None

    def append(self):
        i = self.next
        body = {"type": "SetCell", "body": {"ref": f"A{i}", "value": i}}
        for attempt in range(1, ATTEMPTS + 1):
            self.requests += 1
            status, answer = request("POST", f"{self.url}/v1/sheets/{self.sheet}/entries",
                                     body)
            if status == 201:
                self.next += 1
                return
            self.failed.append((i, attempt, status, str(answer)[:200]))
            # Anything but a node's answer (4xx) may have been committed: look first.
            if status is not None and status < 500:
                break
            if self.find(i) is not None:
                self.next += 1
                return
        raise AssertionError(f"append {i} failed {ATTEMPTS} times: {self.failed[-3:]}")

    def appended(self):
        return self.next - 1


def check_every_node(settings, sheet, appended):
    """Each node, asked directly, has every append once, in order, and the same cells."""
    for n in range(1, int(settings["nodes"]) + 1):
        url = f"http://127.0.0.1:{settings[f'node{n}_port']}/v1/sheets/{sheet}"
        entries = read_entries(url)
        expect(entries is not None, f"node{n}: the entries could not be read")
        refs = [e["body"]["ref"] for e in entries if e["type"] == "SetCell"]
        expect(refs == [f"A{i}" for i in range(1, appended + 1)],
               f"node{n}: the log holds {len(refs)} SetCell entries, not A1..A{appended} "
               f"once each in order: {refs}")
        status, cells = request("GET", f"{url}/cells?range=A1:A{appended}")
        expect(status == 200, f"node{n}: cells {status} {cells}")
        expect(cells["rows"] == [[i] for i in range(1, appended + 1)],
               f"node{n}: cells A1:A{appended} are {cells['rows']}")


def main():
    binary = (sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SHEETLOG_BIN") or
              os.path.join(ROOT, "build", "release", "sheetlog"))
    if shutil.which("haproxy") is None:
        print("SKIP: haproxy is not installed (scripts/deps cluster installs it)")
        return 77
    directory = tempfile.mkdtemp(prefix="sheetlog-cluster-")
    cluster = Cluster(os.path.join(directory, "cluster"), binary)
    try:
        start_seconds = cluster.run("start")
        settings = cluster.settings()
        lb = f"http://127.0.0.1:{settings['lb_port']}"
        balancer = Balancer(settings["stats_port"])
        ready = lambda: request("GET", f"{lb}/readyz")  # noqa: E731
        for n in (1, 2, 3):
            balancer.wait_for(f"node{n}", "UP", ready)

        status, sheet = request("POST", f"{lb}/v1/sheets", {"name": "cluster smoke"})
        expect(status == 201, f"creating a sheet through the balancer: {status} {sheet}")
        appender = Appender(lb, sheet["id"])

        # All three up: every request answered, and round robin reached every node.
        before = {n: balancer.sessions(f"node{n}") for n in (1, 2, 3)}
        for _ in range(30):
            appender.append()
        expect(not appender.failed, f"failed with every node up: {appender.failed}")
        served = {n: balancer.sessions(f"node{n}") - before[n] for n in (1, 2, 3)}
        expect(all(count >= 1 for count in served.values()),
               f"round robin: requests per node {served}")
        check_every_node(settings, sheet["id"], appender.appended())
        print(f"30 appends, 0 failed; requests per node {served}; each node reads all 30")

        # kill -9 node 2, and append on while haproxy's checks notice it.
        cluster.run("kill-node", "2")
        killed = time.monotonic()
        window_start, window_requests = appender.appended(), appender.requests
        redispatched_before = balancer.redispatched()
        while balancer.state("node2") != "DOWN":
            expect(time.monotonic() - killed < 30, "haproxy never marked node2 DOWN")
            appender.append()
        noticed = time.monotonic() - killed
        window = appender.appended() - window_start
        window_failed = list(appender.failed)
        print(f"node2 DOWN after {noticed:.1f} s; meanwhile {window} appends in "
              f"{appender.requests - window_requests} requests, "
              f"{len(window_failed)} failed attempts {window_failed}, "
              f"{balancer.redispatched() - redispatched_before} redispatched by haproxy")

        # With node2 out: not one failed request, and none reached it.
        node2_sessions = balancer.sessions("node2")
        for _ in range(60):
            appender.append()
        expect(appender.failed == window_failed,
               f"failed after haproxy took node2 out: {appender.failed[len(window_failed):]}")
        expect(balancer.sessions("node2") == node2_sessions, "a request went to dead node2")
        print("60 appends with node2 out, 0 failed")

        # node2 back: it rejoins and serves again.
        cluster.run("start-node", "2")
        balancer.wait_for("node2", "UP", ready)
        for _ in range(30):
            appender.append()
        expect(appender.failed == window_failed,
               f"failed after node2 came back: {appender.failed[len(window_failed):]}")
        expect(balancer.sessions("node2") > node2_sessions, "node2 got no request back")
        check_every_node(settings, sheet["id"], appender.appended())
        print(f"30 appends with node2 back, 0 failed; {appender.appended()} appends in "
              f"{appender.requests} requests in all; every node reads all of them once, "
              "in order")

        # Every invariant of the sheet holds (`sheetlog verify`, through the balancer).
        done = subprocess.run([binary, "verify", "--server", lb, "--json"], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        expect(done.returncode == 0, f"sheetlog verify: {done.stdout}")
        print(f"sheetlog verify: {len(json.loads(done.stdout)['violations'])} violations")

        # Stop: nothing left running.
        pids = cluster.pids()
        expect(len(pids) == 6, f"pid files: {pids}")
        stop_seconds = cluster.run("stop")
        left = {name: pid for name, pid in pids.items() if running(pid)}
        expect(not left, f"still running after stop: {left}")
        print(f"PASS: start {start_seconds:.1f} s, stop {stop_seconds:.1f} s, "
              f"nothing left running")
        return 0
    except BaseException:
        cluster.logs_tail()
        raise
    finally:
        subprocess.run([CLUSTER, "destroy", cluster.dir], env=cluster.env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
