#!/usr/bin/env python3
"""`modelpin check` with provider models lookups, against a minimal client, side by side.

    python3 bench/lookups/run.py        (after `cargo build --release`)

100 pins of kind `openai`, each its own model (`model-000` .. `model-099`), one probe x 10 samples
= 1,000 probe calls, concurrency 16. Every request to the simulator takes 50 ms, the models
lookup (`GET /models/{id}`, one per distinct model) included. The reference is the minimal raw
HTTP/1.1 client of bench/throughput making the same 1,000 probe calls at the same concurrency
through the same simulator (it makes no lookups). Both are measured in the same run, RUNS times
(default 5); medians are reported. BASELINE_BIN=path measures another modelpin binary (e.g. an
earlier commit's) in the same run against the same simulator. All traffic stays on 127.0.0.1.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "throughput"))
import run as throughput  # noqa: E402  (the shared measuring harness)

PINS = 100
SAMPLES = 10
CONCURRENCY = 16
LATENCY_MS = 50
RUNS = int(os.environ.get("RUNS", "5"))
KEY = "sk-bench"


def scenario():
    model = {"id": "sim-model", "tokenizer": {"chars_per_token": 4.0, "overhead": 5},
             "answers": [{"prompt_contains": "17 * 23", "answers": [["391", 1.0]]}],
             "price": {"input": 1.0, "output": 2.0}, "latency_ms": LATENCY_MS}
    routes = {f"model-{i:03}": {"model": "m", "report": "requested"} for i in range(PINS)}
    routes[throughput.SENTINEL] = {"model": "fast", "report": "requested"}
    fast = dict(model, latency_ms=0)
    return {"models": {"m": model, "fast": fast}, "routes": routes, "seed": 1}


def write_project(work, base_url):
    os.makedirs(f"{work}/probes", exist_ok=True)
    with open(f"{work}/probes/arith.toml", "w") as f:
        f.write('id = "arith"\nprompt = "What is 17 * 23? Reply with the number only."\n'
                'max_tokens = 8\ntemperature = 1.0\ncompare = "choice"\n')
    lines = ["version = 1", "[settings]", f"concurrency = {CONCURRENCY}",
             "[providers.sim]", 'kind = "openai"', f'base_url = "{base_url}"',
             'api_key_env = "BENCH_KEY"']
    for i in range(PINS):
        lines += ["[[pin]]", f'id = "pin-{i:03}"', 'provider = "sim"', f'model = "model-{i:03}"',
                  'probes = ["probes/arith.toml"]', f"samples = {SAMPLES}"]
    with open(f"{work}/pins.toml", "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if not os.path.exists(throughput.BIN):
        sys.exit(f"{throughput.BIN} missing: run `cargo build --release` first")
    work = tempfile.mkdtemp(prefix="modelpin-lookups-")
    with open(f"{work}/scenario.json", "w") as f:
        json.dump(scenario(), f)
    sim = subprocess.Popen([throughput.BIN, "-q", "sim", "--scenario", f"{work}/scenario.json",
                            "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    addr = sim.stdout.readline().strip()
    try:
        write_project(work, f"http://{addr}/openai/v1")
        env = dict(os.environ, BENCH_KEY=KEY)
        subprocess.run([throughput.BIN, "-q", "lock"], cwd=work, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        baseline = os.environ.get("BASELINE_BIN")
        rows = {"check": [], "reference": [], "baseline": []}
        for _ in range(RUNS):
            r = throughput.measure([throughput.BIN, "-q", "check", "--format", "json"], work,
                                   env=env)
            rows["check"].append(r)
            if baseline:
                rows["baseline"].append(throughput.measure(
                    [baseline, "-q", "check", "--format", "json"], work, env=env))
            ref = throughput.reference_client(addr, PINS * SAMPLES, CONCURRENCY,
                                              lambda i: f"model-{i % PINS:03}")
            rows["reference"].append(ref)
        check = statistics.median(r["wall_s"] for r in rows["check"])
        ref = statistics.median(r["wall_s"] for r in rows["reference"])
        ideal = -(-PINS * SAMPLES // CONCURRENCY) * LATENCY_MS / 1000
        print(f"| | wall (median of {RUNS}) | x ideal ({ideal:.3f} s) |")
        print("|---|---|---|")
        print(f"| modelpin check (1,000 probe calls + {PINS} lookups) | {check:.3f} s | {check / ideal:.3f} |")
        print(f"| minimal client (1,000 probe calls) | {ref:.3f} s | {ref / ideal:.3f} |")
        if baseline:
            old = statistics.median(r["wall_s"] for r in rows["baseline"])
            print(f"| BASELINE_BIN check | {old:.3f} s | {old / ideal:.3f} |")
            print(f"\nBASELINE_BIN / minimal client = {old / ref:.3f}")
        print(f"\ncheck / minimal client = {check / ref:.3f} (target <= 1.15)")
        print(f"peak RSS of check: {statistics.median(r['peak_tree_rss_kib'] for r in rows['check']) / 1024:.1f} MiB")
    finally:
        sim.terminate()
        sim.wait()


if __name__ == "__main__":
    main()
