"""What the daemon benchmarks share: the release binary, a simulated project of N pins with one
probe each, locked and served by `modelpin daemon`, and /proc readings of the daemon.

    with Project("modelpin-idle-", pins=100, schedule="0 0 * * * *") as p:
        p.wait_for_audits(100)
        print(rss_kib(p.daemon.pid))

MODELPIN_BIN names a prebuilt binary (no build); otherwise the release build under
CARGO_TARGET_DIR (default `target`) is built first.
"""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

SERVED = "sim-model-2026-01-01"
TARGET = os.environ.get("CARGO_TARGET_DIR", "target")
BIN = os.path.abspath(os.environ.get("MODELPIN_BIN") or os.path.join(TARGET, "release/modelpin"))
ARITH = 'id = "arith"\nprompt = "What is 17 * 23? Reply with the number only."\nmax_tokens = 8\n'


def build():
    """The release binary, unless MODELPIN_BIN (or NO_BUILD) says one is there already."""
    if not os.environ.get("MODELPIN_BIN") and not os.environ.get("NO_BUILD"):
        subprocess.run(["cargo", "build", "--release", "--quiet"], check=True)


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


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def scenario(pins):
    """`pins` routes `model-000`… to one simulated model that answers the arithmetic probe."""
    model = {
        "id": SERVED,
        "tokenizer": {"chars_per_token": 4.0, "overhead": 5},
        "answers": [{"prompt_contains": "17 * 23", "answers": [["391", 1.0]]}],
        "price": {"input": 1.0, "output": 2.0},
    }
    routes = {f"model-{i:03}": {"model": "m"} for i in range(pins)}
    return {"models": {"m": model}, "routes": routes, "seed": 1}


def pins_toml(pins, schedule, base_url, port):
    lines = [
        "version = 1",
        "[settings]",
        f'schedule = "{schedule}"',
        f'metrics = "127.0.0.1:{port}"',
        'store = "store"',
        "[providers.sim]",
        'kind = "openai-compatible"',
        f'base_url = "{base_url}"',
    ]
    for i in range(pins):
        lines += ["[[pin]]", f'id = "pin-{i:03}"', 'provider = "sim"', f'model = "model-{i:03}"',
                  'probes = ["probes/arith.toml"]', "samples = 1"]
    return "\n".join(lines) + "\n"


class Project:
    """A temporary project on the simulator: `pins` pins locked, then `modelpin daemon` started.
    Stops the daemon (SIGTERM) and the simulator on exit."""

    def __init__(self, prefix, pins, schedule):
        self.prefix, self.pins, self.schedule = prefix, pins, schedule

    def __enter__(self):
        build()
        self.work = tempfile.mkdtemp(prefix=self.prefix)
        with open(f"{self.work}/scenario.json", "w") as f:
            json.dump(scenario(self.pins), f)
        self.sim = subprocess.Popen([BIN, "sim", "--scenario", f"{self.work}/scenario.json"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        addr = self.sim.stdout.readline().strip()
        self.port = free_port()
        os.makedirs(f"{self.work}/probes")
        with open(f"{self.work}/probes/arith.toml", "w") as f:
            f.write(ARITH)
        with open(f"{self.work}/pins.toml", "w") as f:
            f.write(pins_toml(self.pins, self.schedule, f"http://{addr}/compat/v1", self.port))
        subprocess.run([BIN, "lock", "-q"], cwd=self.work, check=True)
        self.daemon = subprocess.Popen([BIN, "daemon", "-q"], cwd=self.work, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *_):
        self.daemon.send_signal(signal.SIGTERM)
        self.daemon.wait(timeout=15)
        self.sim.terminate()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def metrics(self):
        return urllib.request.urlopen(self.url("/metrics"), timeout=5).read().decode()

    def audits(self):
        """Audits finished so far, from `modelpin_audits_total`."""
        return sum(float(v) for v in
                   re.findall(r"^modelpin_audits_total\{[^}]*\} (\S+)$", self.metrics(), re.M))

    def wait_for_audits(self, count, limit=120, poll=0.5):
        """Waits until `count` audits are finished; False when `limit` seconds pass first."""
        deadline = time.time() + limit
        while time.time() < deadline:
            try:
                if self.audits() >= count:
                    return True
            except OSError:
                pass
            time.sleep(poll)
        return False
