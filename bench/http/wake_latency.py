#!/usr/bin/env python3
"""Cross-node wake-up latency (bench/README.md "Cross-node wake-up"): appends on node A,
one at a time, while an event stream on node B (GET /v1/sheets/{id}/events) waits for
each; prints the time from A's 201 to B's event, p50/p90/p99/max over N appends.
Usage: bench/http/wake_latency.py URL_A URL_B [appends]"""
import http.client
import json
import sys
import time
import urllib.parse


def request(url, method, path, body=None):
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data) if data else None


def main():
    url_a, url_b = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    status, sheet = request(url_a, "POST", "/v1/sheets", {"snapshot_every": 0})
    assert status == 201, status
    sheet_id = sheet["id"]
    parts = urllib.parse.urlsplit(url_b)
    stream = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    stream.request("GET", f"/v1/sheets/{sheet_id}/events?from=1")
    events = stream.getresponse()
    assert events.status == 200, events.status

    def next_entry_id():
        entry_id = None
        while True:
            line = events.fp.readline().decode().rstrip("\n")
            if line.startswith("id: "):
                entry_id = int(line[4:])
            elif line == "" and entry_id is not None:
                return entry_id

    latencies = []
    for i in range(count):
        status, appended = request(url_a, "POST", f"/v1/sheets/{sheet_id}/entries",
                                   {"type": "SetCell", "body": {"ref": "A1", "value": i}})
        acknowledged = time.monotonic()
        assert status == 201, (status, appended)
        while next_entry_id() < appended["seq"]:
            pass
        latencies.append((time.monotonic() - acknowledged) * 1000)
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    print("cross-node wake-up over %d appends: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, "
          "max %.2f ms" % (count, pick(0.5), pick(0.9), pick(0.99), latencies[-1]))


main()
