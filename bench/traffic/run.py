#!/usr/bin/env python3
"""Traffic receiver under load: OTLP/HTTP protobuf batches of 512 GenAI spans posted to
`modelpin daemon` while it audits 20 pins every 5 seconds against the simulator.

One run, four numbers, each next to its target:
- ingest: GenAI spans accepted per second, posted by CLIENTS connections as fast as the daemon
  answers (a 429 is counted and retried after its Retry-After, as OTLP exporters do);
- memory: the daemon's peak resident set during the load;
- audit schedule: probe audits finished in WINDOW seconds without load, then with load;
- reroute latency: from the first batch whose spans show another served model to the
  `modelpin_traffic_served_model_mismatch` gauge turning 1 on /metrics.

Batches are protobuf built here by hand (the few OTLP fields needed), so no Python package is
required. Prints a Markdown table. Run from the repository root:

    python3 bench/traffic/run.py
"""
import http.client
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from daemon_bench import SERVED, Project, rss_kib  # noqa: E402

PINS = 20
BATCH = 512
CLIENTS = int(os.environ.get("CLIENTS", "4"))
WINDOW = int(os.environ.get("WINDOW", "30"))  # seconds, a multiple of the 5 s schedule


# --- OTLP protobuf, just the fields the receiver reads ---------------------------------------

def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def attr_text(key, value):
    return field(1, key.encode()) + field(2, field(1, value.encode()))


def attr_int(key, value):
    return field(1, key.encode()) + field(2, varint(3 << 3) + varint(value))


def span(i, requested, served):
    attributes = [
        attr_text("gen_ai.provider.name", "openai"),
        attr_text("gen_ai.operation.name", "chat"),
        attr_text("gen_ai.request.model", requested),
        attr_text("gen_ai.response.model", served),
        attr_int("gen_ai.usage.input_tokens", 120),
        attr_int("gen_ai.usage.output_tokens", 30),
        attr_text("server.address", "api.example.com"),
    ]
    body = field(1, i.to_bytes(16, "big")) + field(2, (i % 2**64).to_bytes(8, "big"))
    body += field(5, f"chat {requested}".encode())
    for a in attributes:
        body += field(9, a)
    return body


def batch(first, served_for):
    """BATCH spans spread over the pins; `served_for(pin)` names the model that answered."""
    spans = b"".join(field(2, span(first + k, f"model-{k % PINS:03}", served_for(k % PINS)))
                     for k in range(BATCH))
    resource = field(1, attr_text("service.name", "bench"))
    return field(1, field(1, resource) + field(2, spans))


# --- the load ------------------------------------------------------------------------------

class Load:
    """CLIENTS keep-alive connections posting the same batch until stopped."""

    def __init__(self, port, body):
        self.port, self.body = port, body
        self.accepted = self.throttled = self.failed = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.client) for _ in range(CLIENTS)]

    def client(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = {"Content-Type": "application/x-protobuf"}
        while not self.stop.is_set():
            try:
                conn.request("POST", "/v1/traces", self.body, headers)
                answer = conn.getresponse()
                answer.read()
                status, retry = answer.status, answer.getheader("Retry-After")
            except OSError:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                status, retry = 0, None
            with self.lock:
                if status == 200:
                    self.accepted += 1
                elif status == 429:
                    self.throttled += 1
                else:
                    self.failed += 1
            if status == 429:
                time.sleep(min(float(retry or 1), 1.0) / 10)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=15)


def mid_tick():
    """Sleeps to 2.5 s past a 5 s schedule tick, so every window of whole ticks counts the same."""
    time.sleep((2.5 - time.time() % 5) % 5)


def reroute_latency(p):
    """Seconds from posting spans served by another model to the mismatch gauge turning 1."""
    gauge = 'modelpin_traffic_served_model_mismatch{pin="pin-000"} 1'
    body = batch(10**9, lambda pin: "other-model-2026-06-01" if pin == 0 else SERVED)
    sent = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=10)
    conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
    if conn.getresponse().status != 200:
        return None
    while time.monotonic() - sent < 10:
        if gauge in p.metrics():
            return time.monotonic() - sent
        time.sleep(0.02)
    return None


def main():
    with Project("modelpin-traffic-", PINS, "*/5 * * * * *") as p:
        if not p.wait_for_audits(PINS, limit=60):
            sys.exit("start-up audits did not finish")
        port, daemon = p.port, p.daemon
        time.sleep(1)
        idle_rss = rss_kib(daemon.pid)
        mid_tick()
        before = p.audits()
        time.sleep(WINDOW)
        quiet = p.audits() - before

        body = batch(0, lambda pin: SERVED)
        peak = 0
        with Load(port, body) as load:
            mid_tick()
            with load.lock:
                load.accepted = load.throttled = load.failed = 0
            before, t0 = p.audits(), time.monotonic()
            while time.monotonic() - t0 < WINDOW:
                peak = max(peak, rss_kib(daemon.pid))
                time.sleep(0.25)
            loaded = p.audits() - before
            elapsed = time.monotonic() - t0
            accepted, throttled, failed = load.accepted, load.throttled, load.failed
        rate = accepted * BATCH / elapsed
        time.sleep(2)
        latency = reroute_latency(p)
        alive = daemon.poll() is None

        def verdict(ok):
            return "met" if ok else "NOT met"

        print("| measure | without load | with load | target |")
        print("| --- | --- | --- | --- |")
        print(f"| GenAI spans accepted per second ({CLIENTS} clients, batches of {BATCH}) | - | "
              f"{rate:,.0f} ({throttled} answers 429, {failed} failed) | >= 20,000: {verdict(rate >= 20000)} |")
        print(f"| daemon RSS, MiB | {idle_rss / 1024:.1f} | {peak / 1024:.1f} (peak) | "
              f"<= 60: {verdict(peak / 1024 <= 60)} |")
        print(f"| probe audits finished in {WINDOW} s ({PINS} pins every 5 s) | {quiet:.0f} | {loaded:.0f} "
              f"({loaded / quiet:.2f}x) | unaffected: {verdict(quiet > 0 and loaded >= 0.9 * quiet)} |")
        shown = "not seen within 10 s" if latency is None else f"{latency:.2f} s"
        print(f"| reroute in spans to mismatch on /metrics | - | {shown} | <= 2 s: "
              f"{verdict(latency is not None and latency <= 2)} |")
        print(f"| daemon alive after the run | | {'yes' if alive else 'NO'} | |")



if __name__ == "__main__":
    main()
