#!/usr/bin/env python3
"""Detection on a real model: the modelpin CLI at its default configuration (the pins.toml
`modelpin init` writes, its six probes) against llama-cpp-python's own server
(`python -m llama_cpp.server`, unmodified) behind tests/realmodel/stack.py's proxy: one lock on
the unchanged SmolLM2-135M-Instruct, then audits while each variant answers behind the same ID;
and a second null, one lock and its audits while the same file answers from two instances on
different numeric paths, one at random per call (`jitter`). Prints the markdown tables for
BENCHMARKS.md ("Detection on a real model") and writes every audit's verdict as JSON lines to
--out.

Then a power curve of the first-token tier: a pin with one short probe asked twice (too few for
any text test to reach alpha), locked once with logprobs and once with the server ignoring them,
audited at --curve calls per border input (`first_token_samples`) on every variant.

  source .ci/real-model.sh
  cargo build --release
  python3 bench/real_model.py --modelpin target/release/modelpin

(the defaults are the run in BENCHMARKS.md: 200 unchanged audits, 100 jittering ones, 8 of each
swap, the curve at 4, 8, 16 and 32 calls per input with 2 audits each).

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

# The pins.toml `modelpin init` writes, pointed at the server; `{extra}` is more pin keys.
PINS = """version = 1

[providers.local]
kind = "openai-compatible"
base_url = "{base_url}"
api_key_env = "MODELPIN_BENCH_KEY"

[[pin]]
id = "smollm2"
provider = "local"
model = "{model}"
{extra}"""
DEFAULT_PIN = 'probes = ["probes/*.toml"]\n'

# The first-token tier with as little else as the configuration allows: one short probe asked
# twice (too few for any text test to reach alpha, so the verdict is the tier's), and
# `first_token_samples` calls per border input.
CURVE_PIN = 'probes = ["probes/arith.toml"]\nsamples = 2\nfirst_token_samples = {samples}\n'


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
        [python, os.path.join(ROOT, "tests/realmodel/stack.py"), "--models", models,
         "--model-id", MODEL_ID, "--port", "0", "--threads", str(threads)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in child.stdout:
        if line.startswith("listening on "):
            port = int(line.rsplit(":", 1)[1])
            return child, port
    raise SystemExit("stack.py exited before listening")


def run(modelpin, project, args):
    env = dict(os.environ, MODELPIN_BENCH_KEY="unused")
    env.pop("MODELPIN_CONFIG", None)
    started = time.monotonic()
    done = subprocess.run([modelpin] + args, cwd=project, env=env, capture_output=True, text=True)
    return done, time.monotonic() - started


def audit(modelpin, project, resolve=None):
    args = ["check", "--format", "json"]
    if resolve is not None:
        args += ["--resolve", repr(resolve)]
    done, seconds = run(modelpin, project, args)
    report = json.loads(done.stdout)
    pin = report["pins"][0]
    adjusted = [t["adjusted_p"] for t in pin.get("behaviour", [])
                if t.get("adjusted_p") is not None]
    return {
        "smallest_adjusted": min(adjusted) if adjusted else None,
        "exit": done.returncode,
        "seconds": round(seconds, 2),
        "codes": sorted({f["code"] for f in pin.get("findings", [])}),
        "rejected": [t["test"] for t in pin.get("behaviour", []) if t["rejected"]],
        "tests": {t["test"] + ":" + ",".join(t["probes"]): t["p_value"]
                  for t in pin.get("behaviour", [])},
        "sent": pin["calls"]["sent"],
    }


def curve(modelpin, base, points, audits, out):
    """{(logprobs on?, variant, calls per input): [audit]} for the first-token tier alone; each
    audit also written to `out` as it ends."""
    results = collections.defaultdict(list)
    locks = {}
    for logprobs in (True, False):
        project = tempfile.mkdtemp(prefix="modelpin-curve-")
        try:
            os.mkdir(os.path.join(project, "probes"))
            shutil.copy(os.path.join(ROOT, "probes", "arith.toml"), os.path.join(project, "probes"))
            post(base + "/admin/logprobs", {"enabled": logprobs})
            pins = os.path.join(project, "pins.toml")
            with open(pins, "w") as f:
                f.write(PINS.format(base_url=base + "/v1", model=MODEL_ID,
                                    extra=CURVE_PIN.format(samples=points[0])))
            calls, _, seconds, tiers = lock(modelpin, base, project, "base")
            locks[logprobs] = (calls, seconds, tiers)
            for i in range(audits):
                for k in points:
                    with open(pins, "w") as f:
                        f.write(PINS.format(base_url=base + "/v1", model=MODEL_ID,
                                            extra=CURVE_PIN.format(samples=k)))
                    for variant in ["base"] + VARIANTS:
                        post(base + "/admin/variant", {"variant": variant})
                        a = audit(modelpin, project)
                        a.update(variant=variant, logprobs=logprobs, calls_per_input=k)
                        results[(logprobs, variant, k)].append(a)
                        out.write(json.dumps(a) + "\n")
                        out.flush()
        finally:
            shutil.rmtree(project, ignore_errors=True)
    post(base + "/admin/logprobs", {"enabled": True})
    return results, locks


def calibration(rows):
    """Markdown lines: per test, how often the unchanged model's p-value fell at or under 0.05
    and 0.01. The family's alpha (0.001) is too small to check over a few hundred audits; these
    rates are not. Every audit is judged against the one lock, so the rates are conditional on
    that lock's baseline: a test can sit above its level for one lock and below for another."""
    by_test = collections.defaultdict(list)
    for r in rows:
        for name, p in r["tests"].items():
            if p is not None:
                test, probes = name.split(":", 1)
                probes = probes.split(",")
                label = f"{test} ({len(probes)} inputs)" if len(probes) > 1 else f"{test}:{probes[0]}"
                by_test[label].append(p)
    lines = ["| test (unchanged model) | audits | p ≤ 0.05 | p ≤ 0.01 | smallest p |",
             "|---|---|---|---|---|"]
    for name, ps in sorted(by_test.items()):
        n = len(ps)
        lines.append(f"| `{name}` | {n} | {sum(p <= 0.05 for p in ps) / n:.3f} | "
                     f"{sum(p <= 0.01 for p in ps) / n:.3f} | {min(ps):.2g} |")
    return lines


def se(p, n):
    return math.sqrt(max(p * (1 - p), 0) / n) if n else float("nan")


def make_project(base, prefix):
    project = tempfile.mkdtemp(prefix=prefix)
    shutil.copytree(os.path.join(ROOT, "probes"), os.path.join(project, "probes"))
    with open(os.path.join(project, "pins.toml"), "w") as f:
        f.write(PINS.format(base_url=base + "/v1", model=MODEL_ID, extra=DEFAULT_PIN))
    return project


def lock(modelpin, base, project, variant):
    """Locks `project` while `variant` answers: (calls, output tokens, seconds, tier lines)."""
    post(base + "/admin/variant", {"variant": variant})
    before = get(base + "/admin/stats")
    done, seconds = run(modelpin, project, ["lock"])
    if done.returncode != 0:
        raise SystemExit(f"lock ({variant}) failed:\n{done.stderr}")
    after = get(base + "/admin/stats")
    tiers = [l for l in done.stderr.splitlines() if l.startswith("tiers ")]
    return (after["calls"] - before["calls"],
            after["completion_tokens"] - before["completion_tokens"], seconds, tiers)


def verdict_table(results, rows_order):
    print("| what answered behind the same ID | lock | audits | flagged (exit 1) | rate ± SE | "
          "rejected tests / findings (audits) | s per audit |")
    print("|---|---|---|---|---|---|---|")
    for variant, locked in rows_order:
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
        bound = ""
        if flagged == 0:
            # One-sided 95 % upper bound on the rate when none of n flagged: 1 - 0.05^(1/n).
            bound = f" (≤ {1 - 0.05 ** (1 / len(rows)):.4f}, 95 %)"
        print(f"| {variant} | {locked} | {len(rows)} | {flagged}{extra} | "
              f"{rate:.3f} ± {se(rate, len(rows)):.3f}{bound} | {reasons} | {seconds:.1f} |")


def report(args, began, locks, order, results, before, after):
    """The main tables, printed before the curve starts."""

    if not order:
        print("No audits asked for: the power curve only.")
    print(f"One run, {time.strftime('%Y-%m-%d')}, against llama-cpp-python's own server "
          f"(`python -m llama_cpp.server`, {args.threads} thread(s) per instance); alpha {ALPHA}; "
          f"{len(order)} audits in {(time.monotonic() - began) / 60:.1f} min.")
    for name, (calls, tokens, seconds, tiers) in locks.items():
        print(f"- lock on `{name}`: {calls} calls, {tokens} output tokens, {seconds:.0f} s; "
              + "; ".join(f"`{t}`" for t in tiers))
    print()
    verdict_table(results, [("base", "base"), ("jitter", "jitter")]
                  + [(v, "base") for v in VARIANTS])
    for null in ("base", "jitter"):
        if results[null]:
            print()
            print(f"Null `{null}`:")
            print("\n".join(calibration(results[null])))
    calls = after["calls"] - before["calls"]
    tokens = after["completion_tokens"] - before["completion_tokens"]
    one_token = after["by_max_tokens"].get("1", {}).get("calls", 0) - before[
        "by_max_tokens"].get("1", {}).get("calls", 0)
    if not order:
        sys.stdout.flush()
        return
    print()
    print(f"Per audit: {calls / len(order):.0f} calls ({one_token / len(order):.0f} one-token), "
          f"{tokens / len(order):.0f} output tokens (all variants).")
    sys.stdout.flush()


def write_tsv(args, order, results):
    """Each audit's case and smallest adjusted p-value, one per line, for the statistics-layer
    bench (`cargo run --release --example sequential`)."""
    with open(args.tsv, "w") as f:
        f.write("# One line per audit of a real-model run (bench/real_model.py "
                f"--resolve {args.resolve}, {time.strftime('%Y-%m-%d')}; llama-cpp-python's\n"
                "# unmodified server, SmolLM2-135M-Instruct Q4_1, init pins.toml): the case and "
                "the audit's\n# smallest Holm-adjusted p-value.\n")
        for variant in dict.fromkeys(order):
            for a in results[variant]:
                if a["smallest_adjusted"] is not None:
                    f.write(f"{variant}\t{a['smallest_adjusted']:.6g}\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=os.environ.get("MODELPIN_LLAMA_PYTHON"))
    parser.add_argument("--models", default=os.environ.get("MODELPIN_MODELS"))
    parser.add_argument("--modelpin", default=os.path.join(ROOT, "target/release/modelpin"))
    parser.add_argument("--null", type=int, default=200, help="audits of the unchanged model")
    parser.add_argument("--jitter", type=int, default=100,
                        help="audits of the unchanged model on two numeric paths")
    parser.add_argument("--swaps", type=int, default=8, help="audits of each swap")
    parser.add_argument("--only", default=",".join(VARIANTS),
                        help="the swaps to audit, comma-separated (default: all)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads per server instance (five instances share the cores)")
    parser.add_argument("--curve", default="4,8,16,32",
                        help="calls per border input for the power curve ('' for none)")
    parser.add_argument("--curve-audits", type=int, default=2, help="audits per curve point")
    parser.add_argument("--out", default="real_model_audits.jsonl")
    parser.add_argument("--resolve", type=float, metavar="P",
                        help="the main run's checks resolve adjusted p-values down to P "
                             "(`check --resolve`; the daemon's own look at a late audit)")
    parser.add_argument("--tsv", metavar="PATH",
                        help="write each main-run audit's case and smallest adjusted p-value "
                             "here (bench/sequential/real_audits.tsv)")
    parser.add_argument("--keep-lock", metavar="PATH",
                        help="copy the base lock here (for bench/lock_size.py)")
    args = parser.parse_args()
    swaps = [v for v in args.only.split(",") if v]
    unknown = [v for v in swaps if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"--only: unknown swap {unknown[0]!r} (one of {', '.join(VARIANTS)})")
    if not args.python or not args.models:
        raise SystemExit("set MODELPIN_LLAMA_PYTHON and MODELPIN_MODELS (source .ci/real-model.sh)")

    began = time.monotonic()
    child, port = start_server(args.python, args.models, args.threads)
    base = f"http://127.0.0.1:{port}"
    project = make_project(base, "modelpin-bench-")
    jitter_project = make_project(base, "modelpin-bench-jitter-")
    try:
        locks = {"base": lock(args.modelpin, base, project, "base")}
        if args.keep_lock:
            shutil.copyfile(os.path.join(project, "modelpin.lock"), args.keep_lock)
        if args.jitter:
            locks["jitter"] = lock(args.modelpin, base, jitter_project, "jitter")
        results = collections.defaultdict(list)
        plan = ([("base", args.null)] + [("jitter", args.jitter)]
                + [(v, args.swaps) for v in swaps])
        # Interleaved, so a slow stretch of the machine lands on every row alike.
        order = []
        for i in range(max(n for _, n in plan)):
            order += [v for v, n in plan if i < n]
        before = get(base + "/admin/stats")
        with open(args.out, "w") as out:
            for variant in order:
                post(base + "/admin/variant", {"variant": variant})
                a = audit(args.modelpin, jitter_project if variant == "jitter" else project,
                          args.resolve)
                a["variant"] = variant
                results[variant].append(a)
                out.write(json.dumps(a) + "\n")
                out.flush()
        after = get(base + "/admin/stats")
        if args.tsv:
            write_tsv(args, order, results)
        report(args, began, locks, order, results, before, after)
        points = [int(k) for k in args.curve.split(",") if k]
        curve_began = time.monotonic()
        with open(args.out, "a") as out:
            curved, curve_locks = (curve(args.modelpin, base, points, args.curve_audits, out)
                                   if points else ({}, {}))
        curve_seconds = time.monotonic() - curve_began
    finally:
        child.terminate()
        child.wait()
        shutil.rmtree(project, ignore_errors=True)
        shutil.rmtree(jitter_project, ignore_errors=True)
    print(f"\nWhole run {(time.monotonic() - began) / 60:.1f} min.")
    if not points:
        return
    print()
    print(f"Power curve of the first-token tier (one short probe asked twice beside it), "
          f"{args.curve_audits} "
          f"audits per cell, {curve_seconds / 60:.1f} min:")
    for logprobs, (calls, seconds, tiers) in curve_locks.items():
        print(f"- lock {'with' if logprobs else 'without'} logprobs: {calls} one-token calls, "
              f"{seconds:.0f} s; " + "; ".join(f"`{t}`" for t in tiers))
    print()
    head = " | ".join(f"{k} per input" for k in points)
    print(f"| what answered | logprobs | {head} |")
    print("|---|---|" + "---|" * len(points))
    for variant in ["base"] + VARIANTS:
        for logprobs in (True, False):
            cells = []
            for k in points:
                rows = curved[(logprobs, variant, k)]
                flagged = sum(1 for r in rows if r["exit"] == 1)
                other = sum(1 for r in rows if r["exit"] not in (0, 1))
                cells.append(f"{flagged}/{len(rows)}" + (f" ({other} other)" if other else ""))
            print(f"| {variant} | {'yes' if logprobs else 'no'} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
