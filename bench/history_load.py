#!/usr/bin/env python3
"""`/api/history` under load: daemon memory and health while many clients read a large history.

Starts the simulator, locks 100 pins audited every second, waits until the store holds AUDITS
audits, then sends REQUESTS `GET /api/history` (no `limit`: the default page) at CONCURRENCY,
sampling the daemon's RSS and `/healthz` throughout; then reads the whole history once through
every page. Prints Markdown table rows. Run from the repository root:

    python3 bench/history_load.py
"""
import concurrent.futures
import json
import os
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from daemon_bench import Project, rss_kib  # noqa: E402

PINS = 100
AUDITS = int(os.environ.get("AUDITS", "10000"))
REQUESTS = int(os.environ.get("REQUESTS", "150"))
CONCURRENCY = int(os.environ.get("CONCURRENCY", "50"))


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.headers.get("Link"), r.read()
    except urllib.error.HTTPError as e:
        return e.code, None, b""
    except OSError:
        return 0, None, b""


def main():
    with Project("modelpin-history-", PINS, "* * * * * *") as p:
        p.wait_for_audits(AUDITS, limit=float("inf"), poll=1)
        port, daemon = p.port, p.daemon
        base_rss = rss_kib(daemon.pid)
        peak, unhealthy, stop = [base_rss], [0], threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], rss_kib(daemon.pid))
                status, _, _ = get(f"http://127.0.0.1:{port}/healthz")
                unhealthy[0] += status != 200
                time.sleep(0.2)

        sampler = threading.Thread(target=sample)
        sampler.start()
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(CONCURRENCY) as pool:
            results = list(pool.map(get, [f"http://127.0.0.1:{port}/api/history"] * REQUESTS))
        wall = time.time() - t0
        stop.set()
        sampler.join()
        ok = sum(1 for s, _, _ in results if s == 200)
        per_page = len(json.loads(results[0][2] or b"[]"))
        print(f"| {AUDITS} audits, {REQUESTS} requests at {CONCURRENCY} | RSS {base_rss / 1024:.0f} -> "
              f"{peak[0] / 1024:.0f} MiB | {ok} ok, {per_page} records each, {wall:.1f} s | "
              f"/healthz not 200: {unhealthy[0]} samples |")
        t0, pages, records = time.time(), 0, 0
        url = f"http://127.0.0.1:{port}/api/history?limit=1000"
        while url:
            status, link, body = get(url)
            pages, records = pages + 1, records + len(json.loads(body or b"[]"))
            url = f"http://127.0.0.1:{port}{link.split('<')[1].split('>')[0]}" if link else None
        print(f"| whole history, pages of 1000 | {records} records in {pages} pages, "
              f"{time.time() - t0:.1f} s, peak RSS {max(peak[0], rss_kib(daemon.pid)) / 1024:.0f} MiB |")


if __name__ == "__main__":
    main()
