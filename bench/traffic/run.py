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
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import http.client
import urllib.request

PINS = 20
BATCH = 512
CLIENTS = int(os.environ.get("CLIENTS", "4"))
WINDOW = int(os.environ.get("WINDOW", "30"))  # seconds, a multiple of the 5 s schedule
SERVED = "sim-model-2026-01-01"
TARGET = os.environ.get("CARGO_TARGET_DIR", "target")
BIN = os.path.abspath(os.path.join(TARGET, "release/modelpin"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


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


# --- the daemon ------------------------------------------------------------------------------

def scenario():
    model = {
        "id": SERVED,
        "tokenizer": {"chars_per_token": 4.0, "overhead": 5},
        "answers": [{"prompt_contains": "17 * 23", "answers": [["391", 1.0]]}],
        "price": {"input": 1.0, "output": 2.0},
    }
    routes = {f"model-{i:03}": {"model": "m"} for i in range(PINS)}
    return {"models": {"m": model}, "routes": routes, "seed": 1}


def pins_toml(base_url, port):
    lines = [
        "version = 1",
        "[settings]",
        'schedule = "*/5 * * * * *"',
        f'metrics = "127.0.0.1:{port}"',
        'store = "store"',
        "[providers.sim]",
        'kind = "openai-compatible"',
        f'base_url = "{base_url}"',
    ]
    for i in range(PINS):
        lines += ["[[pin]]", f'id = "pin-{i:03}"', 'provider = "sim"', f'model = "model-{i:03}"',
                  'probes = ["probes/arith.toml"]', "samples = 1"]
    return "\n".join(lines) + "\n"


def metrics(port):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()


def audits(port):
    body = metrics(port)
    return sum(float(v) for v in re.findall(r"^modelpin_audits_total\{[^}]*\} (\S+)$", body, re.M))


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


def reroute_latency(port):
    """Seconds from posting spans served by another model to the mismatch gauge turning 1."""
    gauge = 'modelpin_traffic_served_model_mismatch{pin="pin-000"} 1'
    body = batch(10**9, lambda pin: "other-model-2026-06-01" if pin == 0 else SERVED)
    sent = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
    if conn.getresponse().status != 200:
        return None
    while time.monotonic() - sent < 10:
        if gauge in metrics(port):
            return time.monotonic() - sent
        time.sleep(0.02)
    return None


def main():
    if not os.environ.get("NO_BUILD"):
        subprocess.run(["cargo", "build", "--release", "--quiet"], check=True)
    work = tempfile.mkdtemp(prefix="modelpin-traffic-")
    with open(f"{work}/scenario.json", "w") as f:
        json.dump(scenario(), f)
    sim = subprocess.Popen([BIN, "sim", "--scenario", f"{work}/scenario.json"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    addr = sim.stdout.readline().strip()
    port = free_port()
    os.makedirs(f"{work}/probes")
    with open(f"{work}/probes/arith.toml", "w") as f:
        f.write('id = "arith"\nprompt = "What is 17 * 23? Reply with the number only."\nmax_tokens = 8\n')
    with open(f"{work}/pins.toml", "w") as f:
        f.write(pins_toml(f"http://{addr}/compat/v1", port))
    subprocess.run([BIN, "lock", "-q"], cwd=work, check=True)
    daemon = subprocess.Popen([BIN, "daemon", "-q"], cwd=work, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if audits(port) >= PINS:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            sys.exit("start-up audits did not finish")
        time.sleep(1)
        idle_rss = rss_kib(daemon.pid)
        mid_tick()
        before = audits(port)
        time.sleep(WINDOW)
        quiet = audits(port) - before

        body = batch(0, lambda pin: SERVED)
        peak = 0
        with Load(port, body) as load:
            mid_tick()
            with load.lock:
                load.accepted = load.throttled = load.failed = 0
            before, t0 = audits(port), time.monotonic()
            while time.monotonic() - t0 < WINDOW:
                peak = max(peak, rss_kib(daemon.pid))
                time.sleep(0.25)
            loaded = audits(port) - before
            elapsed = time.monotonic() - t0
            accepted, throttled, failed = load.accepted, load.throttled, load.failed
        rate = accepted * BATCH / elapsed
        time.sleep(2)
        latency = reroute_latency(port)
        alive = daemon.poll() is None

        def verdict(ok):
            return "met" if ok else "NOT met"

        print(f"| measure | without load | with load | target |")
        print(f"| --- | --- | --- | --- |")
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
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=15)
        sim.terminate()


if __name__ == "__main__":
    main()
