#!/usr/bin/env python3
"""`modelpin scan` against ripgrep on the same tree, the same IDs, the same run.

Usage: python3 bench/scan/run.py [TREE|pypi] [--runs N] [--modelpin PATH]

TREE defaults to the cargo registry sources (~/.cargo/registry/src); `pypi` downloads (once, with
pip) and unpacks the sdists named in SDISTS, a tree dense with model IDs. ripgrep searches for one
regex made of the same family prefixes modelpin's matcher uses (read from src/scan/matcher.rs)
and every ID of the built-in lifecycle table (from `modelpin deprecations --data`), each
followed by the ID character class; with the same skips (gitignore, hidden, binary, files over
10 MB, vendored directories). Both tools run alternately, after one warm-up run each, so the page
cache is equally warm; the table reports medians. The ratio is ripgrep's time over modelpin's:
1.0 is as fast as ripgrep, 0.5 is half its speed.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENDORED = ["node_modules", "vendor", "third_party", "bower_components", ".venv", "venv",
            "site-packages", "__pycache__"]


def families():
    text = open(os.path.join(ROOT, "src/scan/matcher.rs")).read()
    block = re.search(r"const FAMILIES: \[&str; \d+\] = \[(.*?)\];", text, re.S).group(1)
    return re.findall(r'"([^"]+)"', block)


def known_ids(modelpin):
    out = subprocess.run([modelpin, "deprecations", "--data", "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    ids = set()
    for fact in json.loads(out):
        for model in fact["models"]:
            ids.add(model.rstrip("*").rsplit("/", 1)[-1])
    return sorted(ids)


def pattern(modelpin):
    alternatives = sorted(set(families()) | set(known_ids(modelpin)), key=len, reverse=True)
    return "(?:" + "|".join(re.escape(a) for a in alternatives) + r")[A-Za-z0-9.:@-]*"


# `pypi`: sdists of Python projects dense with model IDs, fetched once with pip.
SDISTS = ["litellm==1.60.0", "openai==1.60.0", "anthropic==0.45.0"]


def pypi_tree():
    root = os.path.join(tempfile.gettempdir(), "modelpin-scan-bench-pypi")
    if not os.path.isdir(root):
        download = root + ".download"
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--no-binary", ":all:", "--dest", download, *SDISTS], check=True)
        os.makedirs(root)
        for name in sorted(os.listdir(download)):
            shutil.unpack_archive(os.path.join(download, name), root)
    return root


def timed(cmd, cwd):
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return time.perf_counter() - start, done


def main():
    args = sys.argv[1:]
    runs = 5
    modelpin = os.path.join(ROOT, "target/release/modelpin")
    tree = os.path.expanduser("~/.cargo/registry/src")
    while args:
        arg = args.pop(0)
        if arg == "--runs":
            runs = int(args.pop(0))
        elif arg == "--modelpin":
            modelpin = args.pop(0)
        else:
            tree = arg
    rg = shutil.which("rg")
    if rg is None:
        sys.exit("ripgrep (rg) is not installed: apt-get install -y ripgrep")
    tree = pypi_tree() if tree == "pypi" else os.path.abspath(tree)
    # An empty working directory: no pins.toml, so scan uses the built-in table.
    cwd = tempfile.mkdtemp()
    rg_cmd = [rg, "--no-config", "-o", "-n", "--column", "--no-heading", "--max-filesize", "10M"]
    for name in VENDORED:
        rg_cmd += ["-g", f"!**/{name}/**"]
    rg_cmd += ["-e", pattern(modelpin), tree]
    mp_cmd = [modelpin, "scan", "--format", "json", tree]
    timed(rg_cmd, cwd)
    _, warm = timed(mp_cmd, cwd)
    summary = json.loads(warm.stdout)["summary"]
    rg_times, mp_times = [], []
    for _ in range(runs):
        seconds, rg_done = timed(rg_cmd, cwd)
        rg_times.append(seconds)
        seconds, mp_done = timed(mp_cmd, cwd)
        mp_times.append(seconds)
    rg_lines = rg_done.stdout.count(b"\n")
    report = json.loads(mp_done.stdout)
    rg_med, mp_med = statistics.median(rg_times), statistics.median(mp_times)
    print(f"tree: {tree}")
    print(f"files searched by modelpin: {summary['files']} ({summary['bytes'] / 2**20:.1f} MiB), "
          f"skipped {summary['skipped_large']} over 10 MB and {summary['skipped_binary']} binary")
    print(f"runs: {runs} each, alternating, after one warm-up; threads: both tools' defaults "
          f"on {os.cpu_count()} CPUs")
    print(f"ripgrep {subprocess.run([rg, '--version'], capture_output=True, text=True).stdout.splitlines()[0]}: "
          f"median {rg_med:.3f} s (min {min(rg_times):.3f}), {rg_lines} regex matches")
    print(f"modelpin scan: median {mp_med:.3f} s (min {min(mp_times):.3f}), "
          f"{len(report['occurrences'])} model-ID occurrences")
    print(f"speed ratio (ripgrep time / modelpin time): {rg_med / mp_med:.2f}")


if __name__ == "__main__":
    main()
