#!/usr/bin/env python3
"""The daemon on a real model, time compressed: `modelpin daemon` at the pins.toml `modelpin init`
writes, auditing every --every seconds against llama-cpp-python's own server (unmodified, behind
tests/realmodel/stack.py's proxy, as bench/real_model.py). Every tick is a behaviour audit
(`behavior_calls_per_day` set past what the schedule spends) and the threshold of the accumulated
evidence is held at its value for the defaults, one behaviour audit a day
(`false_alarms_per_year` scaled by the compressed schedule): each audit stands for a day.

--null audits of the unchanged model, then --swap answers behind the same ID until the daemon
raises `behavior_drift` or --after more audits pass. Prints the false alarms among the unchanged
audits, the detection delay, and what `modelpin lock` says watching the pin costs at the default
hourly schedule and a price of $5 / $30 per million input / output tokens.

  source .ci/real-model.sh
  cargo build --release
  python3 bench/real_model_daemon.py --modelpin target/release/modelpin

Standard library only.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_model  # noqa: E402  (the server, the project and the lock of the other benchmark)

# One behaviour audit a day (an hourly schedule at the default budget), 0.01 false alarms a year:
# the rate per audit, and the detector's threshold at its half of it (`stats::sequential`).
PER_AUDIT = 0.01 / 365
DAILY_THRESHOLD = 1 / (0.5 * PER_AUDIT)
PRICE = 'price = { input = 5.0, output = 30.0 }\n'


def history(port):
    """Every record /api/history lists, oldest first."""
    records, path = [], "/api/history"
    while path:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as r:
            records += json.load(r)
            link = r.headers.get("Link") or ""
        m = re.search(r'<([^>]+)>;\s*rel="next"', link)
        path = m.group(1) if m else None
        if path and path.startswith("http"):
            path = "/" + path.split("/", 3)[3]
    records = [r for r in records if r.get("source") is None]
    records.sort(key=lambda r: r["started_at"])
    return records


def start_daemon(modelpin, project):
    env = dict(os.environ, MODELPIN_BENCH_KEY="unused")
    child = subprocess.Popen([modelpin, "daemon"], cwd=project, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in child.stderr:
        lines.append(line)
        m = re.search(r"url=http://127\.0\.0\.1:(\d+)/", line)
        if m:
            threading.Thread(target=lambda: [None for _ in child.stderr], daemon=True).start()
            return child, int(m.group(1))
    raise SystemExit("the daemon exited before listening:\n" + "".join(lines))


def drift(record):
    return any(f["code"] == "behavior_drift" for f in record["pin"]["findings"])


def progress(records, path):
    """The unchanged audits so far, for a run watched while it goes."""
    if not path:
        return
    weighed = [r["pin"]["lifetime"] for r in records if r["pin"].get("lifetime")]
    line = {"audits": len(records), "weighed": len(weighed),
            "false_alarms": sum(drift(r) for r in records),
            "held_back": sum(bool(w.get("held_back")) for w in weighed),
            "largest_statistic": max((w["statistic"] for w in weighed), default=None),
            "statuses": sorted({r["pin"]["status"] for r in records})}
    with open(path, "w") as f:
        json.dump(line, f)
    # Each audit's verdict and p-values beside it, so a run cut short can still be read.
    with open(path + ".audits.jsonl", "w") as f:
        for r in records:
            pin = r["pin"]
            f.write(json.dumps({
                "started_at": r["started_at"], "status": pin["status"],
                "codes": sorted({x["code"] for x in pin.get("findings", [])}),
                "lifetime": pin.get("lifetime"),
                "tests": {t["test"] + ":" + ",".join(t.get("probes", [])): t.get("p_value")
                          for t in pin.get("behaviour", [])},
            }) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=os.environ.get("MODELPIN_LLAMA_PYTHON"))
    parser.add_argument("--models", default=os.environ.get("MODELPIN_MODELS"))
    parser.add_argument("--modelpin", default=os.path.join(real_model.ROOT, "target/release/modelpin"))
    parser.add_argument("--every", type=int, default=20, help="seconds between audits")
    parser.add_argument("--null", type=int, default=150, help="audits of the unchanged model")
    parser.add_argument("--swap", default="requant", choices=real_model.VARIANTS)
    parser.add_argument("--progress", help="a file the unchanged audits so far are written to "
                        "(and each audit to PROGRESS.audits.jsonl)")
    parser.add_argument("--after", type=int, default=40, help="audits of the swap at most")
    args = parser.parse_args()
    if not args.python or not args.models:
        raise SystemExit("set MODELPIN_LLAMA_PYTHON and MODELPIN_MODELS (source .ci/real-model.sh)")
    began = time.monotonic()
    server, port = real_model.start_server(args.python, args.models, 1)
    base = f"http://127.0.0.1:{port}"
    hourly = real_model.make_project(base, "modelpin-daemon-hourly-")
    project = real_model.make_project(base, "modelpin-daemon-")
    daemon = None
    try:
        # What watching costs at the defaults: `lock` at the default hourly schedule, priced.
        with open(os.path.join(hourly, "pins.toml"), "a") as f:
            f.write(PRICE)
        real_model.post(base + "/admin/variant", {"variant": "base"})
        done, _ = real_model.run(args.modelpin, hourly, ["lock"])
        watched = [l for l in done.stderr.splitlines() if "watched by" in l]

        per_year = 86_400 / args.every * 365
        with open(os.path.join(project, "pins.toml")) as f:
            pins = f.read()
        settings = (f'[settings]\nschedule = "*/{args.every} * * * * *"\n'
                    f'metrics = "127.0.0.1:0"\nstore = "store"\n'
                    f"false_alarms_per_year = {per_year * PER_AUDIT:.6f}\n"
                    f"behavior_calls_per_day = 100000000\n\n")
        with open(os.path.join(project, "pins.toml"), "w") as f:
            f.write(pins.replace("version = 1\n", "version = 1\n\n" + settings, 1))
        locked = real_model.lock(args.modelpin, base, project, "base")
        daemon, api = start_daemon(args.modelpin, project)
        while True:
            records = history(api)
            progress(records, args.progress)
            if len(records) >= args.null:
                break
            time.sleep(args.every / 2)
        real_model.post(base + "/admin/variant", {"variant": args.swap})
        changed_at = history(api)[-1]["started_at"]
        while True:
            records = history(api)
            after = [r for r in records if r["started_at"] > changed_at]
            if any(drift(r) for r in after) or len(after) >= args.after:
                break
            time.sleep(args.every / 2)
    finally:
        if daemon:
            daemon.terminate()
            daemon.wait()
        server.terminate()
        server.wait()
        shutil.rmtree(hourly, ignore_errors=True)
        shutil.rmtree(project, ignore_errors=True)

    before = [r for r in records if r["started_at"] <= changed_at]
    weighed = [r for r in before if r["pin"].get("lifetime")]
    false = [r for r in before if drift(r)]
    held = [r for r in before if (r["pin"].get("lifetime") or {}).get("held_back")]
    statistics = [r["pin"]["lifetime"]["statistic"] for r in weighed]
    delay = next((i + 1 for i, r in enumerate(after) if drift(r)), None)
    cause = next((f["evidence"].get("accumulated", {}).get("cause")
                  for r in after for f in r["pin"]["findings"]
                  if f["code"] == "behavior_drift"), None)
    print(f"Daemon on the real model: {len(records)} audits every {args.every} s, "
          f"{(time.monotonic() - began) / 60:.0f} min; lock {locked[0]} calls.")
    print()
    print("| measure | value |\n|---|---|")
    print(f"| unchanged audits (weighed) | {len(before)} ({len(weighed)}) |")
    print(f"| false `behavior_drift` among them | {len(false)} |")
    print(f"| audits that rejected on their own, held back | {len(held)} |")
    if statistics:
        print(f"| largest statistic while unchanged (threshold {DAILY_THRESHOLD:.0f}) | "
              f"{max(statistics):.3g} |")
    print(f"| `{args.swap}`: audits to `behavior_drift` | "
          f"{delay if delay else f'none in {len(after)}'} ({cause or '–'}) |")
    print()
    for line in watched:
        print(f"- `modelpin lock` at the defaults, priced at $5/$30: `{line.strip()}`")


if __name__ == "__main__":
    main()
