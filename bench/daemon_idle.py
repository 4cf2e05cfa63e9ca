#!/usr/bin/env python3
"""Idle footprint of `modelpin daemon` with 100 pins scheduled: resident memory and CPU.

Starts the simulator (`modelpin sim`), locks 100 pins, starts the daemon, waits until every pin's
start-up audit is stored, then samples /proc for IDLE_SECONDS while nothing is due (hourly
schedule). Prints a Markdown table row. Run from the repository root:

    python3 bench/daemon_idle.py
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

PINS = 100
IDLE_SECONDS = int(os.environ.get("IDLE_SECONDS", "60"))
BIN = os.path.abspath("target/release/modelpin")


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


def scenario():
    model = {
        "id": "sim-model-2026-01-01",
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
        'schedule = "0 0 * * * *"',
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


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], check=True)
    work = tempfile.mkdtemp(prefix="modelpin-idle-")
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
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
                done = sum(float(v) for v in re.findall(r'^modelpin_audits_total\{[^}]*\} (\S+)$', body, re.M))
                if done >= PINS:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            sys.exit("start-up audits did not finish")
        time.sleep(2)
        ticks0, t0 = cpu_ticks(daemon.pid), time.time()
        peak = 0
        while time.time() - t0 < IDLE_SECONDS:
            peak = max(peak, rss_kib(daemon.pid))
            time.sleep(1)
        cpu = (cpu_ticks(daemon.pid) - ticks0) / os.sysconf("SC_CLK_TCK")
        wall = time.time() - t0
        print(f"| {PINS} pins, idle {wall:.0f} s | RSS {peak / 1024:.1f} MiB | CPU {100 * cpu / wall:.2f}% of a core |")
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=15)
        sim.terminate()


if __name__ == "__main__":
    main()
