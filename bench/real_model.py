#!/usr/bin/env python3
"""Detection on a real model: the modelpin CLI at its default configuration (the pins.toml
`modelpin init` writes, its six probes) against tests/realmodel/serve.py, one lock on the
unchanged SmolLM2-135M-Instruct, then audits while each variant answers behind the same ID.
Prints the markdown table for BENCHMARKS.md ("Detection on a real model") and writes every
audit's verdict as JSON lines to --out.

  source .ci/real-model.sh
  cargo build --release
  python3 bench/real_model.py --modelpin target/release/modelpin --null 200 --swaps 20

Standard library only.
"""

import argparse
import collections
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_ID = "smollm2-135m-instruct"
VARIANTS = ["family", "system", "requant", "temperature"]
ALPHA = 0.001

PINS = """version = 1

[providers.local]
kind = "openai-compatible"
base_url = "{base_url}"
api_key_env = "MODELPIN_BENCH_KEY"

[[pin]]
id = "smollm2"
provider = "local"
model = "{model}"
probes = ["probes/*.toml"]
"""


def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)


def get(url):
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.load(r)


def start_server(python, models, threads):
    child = subprocess.Popen(
        [python, os.path.join(ROOT, "tests/realmodel/serve.py"), "--models", models,
         "--model-id", MODEL_ID, "--port", "0", "--threads", str(threads)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in child.stdout:
        if line.startswith("listening on "):
            port = int(line.rsplit(":", 1)[1])
            return child, port
    raise SystemExit("serve.py exited before listening")


def run(modelpin, project, args):
    env = dict(os.environ, MODELPIN_BENCH_KEY="unused")
    env.pop("MODELPIN_CONFIG", None)
    started = time.monotonic()
    done = subprocess.run([modelpin] + args, cwd=project, env=env, capture_output=True, text=True)
    return done, time.monotonic() - started


def audit(modelpin, project):
    done, seconds = run(modelpin, project, ["check", "--format", "json"])
    report = json.loads(done.stdout)
    pin = report["pins"][0]
    return {
        "exit": done.returncode,
        "seconds": round(seconds, 2),
        "codes": sorted({f["code"] for f in pin.get("findings", [])}),
        "rejected": [t["test"] for t in pin.get("behaviour", []) if t["rejected"]],
        "tests": {t["test"] + ":" + ",".join(t["probes"]): t["p_value"]
                  for t in pin.get("behaviour", [])},
        "sent": pin["calls"]["sent"],
    }


def se(p, n):
    return math.sqrt(max(p * (1 - p), 0) / n) if n else float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=os.environ.get("MODELPIN_LLAMA_PYTHON"))
    parser.add_argument("--models", default=os.environ.get("MODELPIN_MODELS"))
    parser.add_argument("--modelpin", default=os.path.join(ROOT, "target/release/modelpin"))
    parser.add_argument("--null", type=int, default=200, help="audits of the unchanged model")
    parser.add_argument("--swaps", type=int, default=20, help="audits of each swap")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="real_model_audits.jsonl")
    args = parser.parse_args()
    if not args.python or not args.models:
        raise SystemExit("set MODELPIN_LLAMA_PYTHON and MODELPIN_MODELS (source .ci/real-model.sh)")

    began = time.monotonic()
    child, port = start_server(args.python, args.models, args.threads)
    base = f"http://127.0.0.1:{port}"
    project = tempfile.mkdtemp(prefix="modelpin-bench-")
    try:
        shutil.copytree(os.path.join(ROOT, "probes"), os.path.join(project, "probes"))
        with open(os.path.join(project, "pins.toml"), "w") as f:
            f.write(PINS.format(base_url=base + "/v1", model=MODEL_ID))
        post(base + "/admin/variant", {"variant": "base"})
        done, lock_seconds = run(args.modelpin, project, ["lock"])
        if done.returncode != 0:
            raise SystemExit(f"lock failed:\n{done.stderr}")
        lock_calls = get(base + "/admin/stats")
        tiers = [l for l in done.stderr.splitlines() if l.startswith("tiers ")]
        results = collections.defaultdict(list)
        plan = [("base", args.null)] + [(v, args.swaps) for v in VARIANTS]
        # Interleaved, so a slow stretch of the machine lands on every row alike.
        order = []
        for i in range(max(n for _, n in plan)):
            order += [v for v, n in plan if i < n]
        before = get(base + "/admin/stats")
        with open(args.out, "w") as out:
            for variant in order:
                post(base + "/admin/variant", {"variant": variant})
                a = audit(args.modelpin, project)
                a["variant"] = variant
                results[variant].append(a)
                out.write(json.dumps(a) + "\n")
                out.flush()
        after = get(base + "/admin/stats")
    finally:
        child.terminate()
        child.wait()
        shutil.rmtree(project, ignore_errors=True)
    total = time.monotonic() - began

    print(f"One run, {time.strftime('%Y-%m-%d')}: lock once on the unchanged model "
          f"({lock_calls['calls']} calls, {lock_calls['completion_tokens']} output tokens, "
          f"{lock_seconds:.0f} s), then {len(order)} audits; alpha {ALPHA}; "
          f"whole run {total / 60:.1f} min.")
    for line in tiers:
        print(f"`{line}`")
    print()
    print("| what answered behind the same ID | audits | flagged (exit 1) | rate ± SE | "
          "rejected tests / findings (audits) | s per audit |")
    print("|---|---|---|---|---|---|")
    for variant in ["base"] + VARIANTS:
        rows = results[variant]
        if not rows:
            continue
        flagged = sum(1 for r in rows if r["exit"] == 1)
        other = sum(1 for r in rows if r["exit"] not in (0, 1))
        rate = flagged / len(rows)
        why = collections.Counter()
        for r in rows:
            why.update(set(r["rejected"]) | set(r["codes"]))
        reasons = ", ".join(f"{k} {v}" for k, v in why.most_common(6)) or "—"
        seconds = sum(r["seconds"] for r in rows) / len(rows)
        extra = f" ({other} other exit)" if other else ""
        print(f"| {variant} | {len(rows)} | {flagged}{extra} | {rate:.3f} ± {se(rate, len(rows)):.3f}"
              f" | {reasons} | {seconds:.1f} |")
    calls = after["calls"] - before["calls"]
    tokens = after["completion_tokens"] - before["completion_tokens"]
    print()
    print(f"Per audit: {calls / len(order):.0f} calls, {tokens / len(order):.0f} output tokens "
          f"(all variants).")


if __name__ == "__main__":
    sys.exit(main())
