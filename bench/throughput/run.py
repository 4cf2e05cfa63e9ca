#!/usr/bin/env python3
"""Throughput and footprint of `modelpin lock` / `modelpin check`, side by side with promptfoo.

Run from anywhere (paths are relative to the repository):

    python3 bench/throughput/run.py

What it does, in one run:

1. `cargo build --release`.
2. Installs promptfoo (pinned, PROMPTFOO_VERSION below) with
   `npm install --no-audit --no-fund` into bench/throughput/.promptfoo/ (gitignored; reused when
   the pinned version is already there).
3. Starts the simulator (`modelpin sim`) on 127.0.0.1 with one simulated model answering 200
   model IDs (`model-000` .. `model-199`) after 50 ms per call.
4. Generates pins.toml (200 pins x 3 probes x 10 samples = 6,000 calls, concurrency 64) and the
   same workload for promptfoo (200 `openai:chat:model-NNN` providers pointed at the
   simulator's OpenAI-compatible endpoint x 3 tests x `--repeat 10`, `--max-concurrency 64`,
   `--no-cache`).
5. RUNS times (default 3): `modelpin lock`, `modelpin check --format json`, `promptfoo eval`,
   each measured the same way: wall time from spawn to exit; CPU = user + sys of the process and
   every descendant it waited for (`wait4` rusage); peak memory = the largest sum of VmRSS over
   the whole process tree, polled from /proc every 20 ms (also the kernel's ru_maxrss of the
   largest single process, as a floor). The simulator's own request counter (the `serial` in
   every answer's id, read with one extra sentinel call before and after each tool) verifies
   that each tool made exactly 6,000 generation calls.
6. Start-up: median of repeated runs of `modelpin check --help` and of a no-op check (one pin,
   one probe, samples 1, against a 0 ms simulated model, after a lock), plus promptfoo's
   equivalents (`promptfoo eval --help`; one provider, one test, one call).
7. Network check: the no-op runs of both tools under `strace -e connect,sendto,...`; any
   non-loopback address is printed.
8. Diagnostics (DIAGNOSTICS=0 skips): the simulator's real per-call latency, a minimal raw-HTTP
   reference client at the same concurrency, a timeline of one check (when calls arrive), check
   at 0 ms latency, the same calls as 2,000 pins x 1 sample, and config-load time vs pin count.
9. Prints Markdown tables; raw numbers go to bench/throughput/out/ (gitignored). The temp work
   directory is removed unless KEEP_WORK=1.

Environment: RUNS (default 3), STARTUP_RUNS (default 20), SKIP_PROMPTFOO=1 to measure modelpin
only, DIAGNOSTICS=0 to skip the wall-time breakdown, PROMPTFOO_PREFIX to install promptfoo
elsewhere, MODELPIN_BIN to measure an already built binary instead of building the work tree
(MODELPIN_REV labels it in the table). All traffic stays on 127.0.0.1.
"""
import asyncio
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("MODELPIN_BIN") or os.path.join(ROOT, "target", "release", "modelpin")

PROMPTFOO_VERSION = "0.121.20"  # newest release whose `engines` still admits node 20
PROMPTFOO_PREFIX = os.environ.get("PROMPTFOO_PREFIX", os.path.join(HERE, ".promptfoo"))
OUT = os.path.join(HERE, "out")

PINS = 200
SAMPLES = 10
CONCURRENCY = 64
LATENCY_MS = 50
RUNS = int(os.environ.get("RUNS", "3"))
STARTUP_RUNS = int(os.environ.get("STARTUP_RUNS", "20"))
SKIP_PROMPTFOO = os.environ.get("SKIP_PROMPTFOO") == "1"
POLL_S = 0.02

# The three probes, written identically for both tools. Each has a pass/fail rule both tools can
# express: exact match, one of a set, valid JSON.
PROBES = [
    {"id": "arith", "prompt": "What is 17 * 23? Reply with the number only.", "compare": "choice",
     "expect": ('equals = "391"', {"type": "equals", "value": "391"}),
     "answers": [["391", 0.9], ["392", 0.05], ["The answer is 391.", 0.05]]},
    {"id": "capital", "prompt": "Name one of the three largest cities of Australia. Reply with the city name only.",
     "compare": "choice",
     "expect": ('one_of = ["Sydney", "Melbourne", "Brisbane"]',
                {"type": "regex", "value": "^(Sydney|Melbourne|Brisbane)$"}),
     "answers": [["Sydney", 0.5], ["Melbourne", 0.3], ["Brisbane", 0.15], ["Perth", 0.05]]},
    {"id": "json", "prompt": 'Return a JSON object with keys "a" and "b" whose values are 1 and 2. JSON only, no prose.',
     "compare": "text",
     "expect": ("json = true", {"type": "is-json"}),
     "answers": [['{"a": 1, "b": 2}', 0.8], ['{"a":1,"b":2}', 0.15], ['Sure: {"a": 1, "b": 2}', 0.05]]},
]
MAX_TOKENS = 16
CALLS = PINS * len(PROBES) * SAMPLES
IDEAL_S = math.ceil(CALLS / CONCURRENCY) * LATENCY_MS / 1000

SENTINEL = "count-sentinel"
BLACKHOLE = "http://127.0.0.1:9"  # discard port, nothing listens: connection refused
DIAGNOSTICS = os.environ.get("DIAGNOSTICS", "1") != "0"


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- measuring a process tree

def _children(pid):
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids += [int(x) for x in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return kids


def _children_by_scan(root):
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parent[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    tree, frontier = {root}, [root]
    while frontier:
        p = frontier.pop()
        for c, pp in parent.items():
            if pp == p and c not in tree:
                tree.add(c)
                frontier.append(c)
    return tree


HAVE_CHILDREN_FILE = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def tree_pids(root):
    if not HAVE_CHILDREN_FILE:
        return _children_by_scan(root)
    tree, frontier = {root}, [root]
    while frontier:
        for c in _children(frontier.pop()):
            if c not in tree:
                tree.add(c)
                frontier.append(c)
    return tree


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(cmd, cwd, env=None, stdout=None):
    """Runs cmd; returns wall, CPU (self + waited-for descendants), peak tree RSS."""
    out = open(stdout, "w") if stdout else subprocess.DEVNULL
    err_path = (stdout or os.path.join(cwd, "cmd")) + ".stderr"
    err = open(err_path, "w")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
    state = {"peak": 0, "pids": set(), "done": False}

    def poll():
        while not state["done"]:
            pids = tree_pids(proc.pid)
            state["pids"] |= pids
            state["peak"] = max(state["peak"], sum(rss_kib(p) for p in pids))
            time.sleep(POLL_S)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    state["done"] = True
    poller.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if stdout:
        out.close()
    err.close()
    return {
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "peak_tree_rss_kib": max(state["peak"], ru.ru_maxrss),
        "maxrss_single_kib": ru.ru_maxrss,
        "processes": len(state["pids"]),
        "exit": proc.returncode,
        "stderr": err_path,
    }


# ---------------------------------------------------------------- simulator

def scenario():
    def model(mid, latency):
        return {
            "id": mid,
            "tokenizer": {"chars_per_token": 4.0, "overhead": 5},
            "answers": [{"prompt_contains": p["prompt"][:30], "answers": p["answers"]} for p in PROBES],
            "price": {"input": 1.0, "output": 2.0},
            "latency_ms": latency,
        }
    routes = {f"model-{i:03}": {"model": "slow", "report": "requested"} for i in range(PINS)}
    routes["noop-model"] = {"model": "fast", "report": "requested"}
    routes[SENTINEL] = {"model": "fast", "report": "requested"}
    return {"models": {"slow": model("sim-slow", LATENCY_MS), "fast": model("sim-fast", 0)},
            "routes": routes, "seed": 1}


def served(addr):
    """Generation calls the simulator has answered so far (the sentinel call itself excluded)."""
    body = json.dumps({"model": SENTINEL, "max_tokens": 1,
                       "messages": [{"role": "user", "content": "count"}]}).encode()
    req = urllib.request.Request(f"http://{addr}/compat/v1/chat/completions", data=body,
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        ident = json.load(r)["id"]
    return int(re.fullmatch(r"chatcmpl-sim(\d+)", ident).group(1))


def counted(addr, fn):
    before = served(addr)
    result = fn()
    result["sim_calls"] = served(addr) - before - 1
    return result


# ---------------------------------------------------------------- workloads

def write_modelpin(work, base_url, pins, samples, model=lambda i: f"model-{i:03}"):
    os.makedirs(f"{work}/probes", exist_ok=True)
    for p in PROBES:
        with open(f"{work}/probes/{p['id']}.toml", "w") as f:
            f.write(f'id = "{p["id"]}"\nprompt = {json.dumps(p["prompt"])}\nmax_tokens = {MAX_TOKENS}\n'
                    f'temperature = 1.0\ncompare = "{p["compare"]}"\n\n[expect]\n{p["expect"][0]}\n')
    probes = ", ".join(f'"probes/{p["id"]}.toml"' for p in PROBES)
    lines = ["version = 1", "[settings]", f"concurrency = {CONCURRENCY}",
             "[providers.sim]", 'kind = "openai-compatible"', f'base_url = "{base_url}"']
    for i in range(pins):
        lines += ["[[pin]]", f'id = "pin-{i:03}"', 'provider = "sim"', f'model = "{model(i)}"',
                  f"probes = [{probes}]", f"samples = {samples}"]
    with open(f"{work}/pins.toml", "w") as f:
        f.write("\n".join(lines) + "\n")


def write_promptfoo(path, base_url, models, tests=None):
    config = {
        "description": "modelpin throughput benchmark",
        "prompts": ["{{prompt}}"],
        "providers": [{"id": f"openai:chat:{m}", "label": f"pin-{m}",
                       "config": {"apiBaseUrl": base_url, "apiKey": "sk-bench-dummy",
                                  "temperature": 1.0, "max_tokens": MAX_TOKENS}} for m in models],
        "tests": [{"description": p["id"], "vars": {"prompt": p["prompt"]}, "assert": [p["expect"][1]]}
                  for p in (tests or PROBES)],
    }
    with open(path, "w") as f:
        json.dump(config, f, indent=1)


def promptfoo_env(work):
    env = dict(os.environ)
    for k in ("ALL_PROXY", "all_proxy"):
        env.pop(k, None)
    env.update({
        # promptfoo 0.121 still POSTs a "telemetry disabled" event to its own host when
        # PROMPTFOO_DISABLE_TELEMETRY=1 (telemetry.ts: recordTelemetryDisabled -> sendEvent), and
        # no variable turns that off. Its fetch honours the proxy variables, so everything but
        # loopback goes to a closed loopback port (connection refused; no DNS lookup either).
        "HTTP_PROXY": BLACKHOLE, "HTTPS_PROXY": BLACKHOLE,
        "http_proxy": BLACKHOLE, "https_proxy": BLACKHOLE,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
        "PROMPTFOO_DISABLE_REDTEAM_REMOTE_GENERATION": "1",
        "PROMPTFOO_CACHE_ENABLED": "false",
        "PROMPTFOO_CONFIG_DIR": os.path.join(work, "promptfoo-home"),
        "OPENAI_API_KEY": "sk-bench-dummy",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "NODE_NO_WARNINGS": "1",
    })
    return env


def promptfoo_bin():
    return os.path.join(PROMPTFOO_PREFIX, "node_modules", ".bin", "promptfoo")


def install_promptfoo():
    pkg = os.path.join(PROMPTFOO_PREFIX, "node_modules", "promptfoo", "package.json")
    if os.path.exists(pkg):
        with open(pkg) as f:
            if json.load(f).get("version") == PROMPTFOO_VERSION:
                log(f"promptfoo {PROMPTFOO_VERSION} already installed in {PROMPTFOO_PREFIX}")
                return None
    shutil.rmtree(PROMPTFOO_PREFIX, ignore_errors=True)
    os.makedirs(PROMPTFOO_PREFIX)
    with open(os.path.join(PROMPTFOO_PREFIX, "package.json"), "w") as f:
        f.write('{"private": true}\n')
    log(f"npm install promptfoo@{PROMPTFOO_VERSION} into {PROMPTFOO_PREFIX} (takes a few minutes)")
    r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", f"promptfoo@{PROMPTFOO_VERSION}"],
                       cwd=PROMPTFOO_PREFIX, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(promptfoo_bin()):
        return f"`npm install promptfoo@{PROMPTFOO_VERSION}` failed (exit {r.returncode}): " + \
            (r.stderr.strip().splitlines() or ["no output"])[-1]
    return None


def promptfoo_cmd(config):
    # Its most frugal settings: no result database write, no table, no progress bar.
    return [promptfoo_bin(), "eval", "-c", config, "--max-concurrency", str(CONCURRENCY),
            "--no-cache", "--no-write", "--no-table", "--no-progress-bar", "--no-share"]


# ---------------------------------------------------------------- helpers

def med(rows, key):
    return statistics.median(r[key] for r in rows)


def startup(cmd, cwd, runs, env=None):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - t0)
        if r.returncode not in (0, 1, 100):  # 1: modelpin drift; 100: promptfoo failed assertions
            raise SystemExit(f"{cmd} failed with exit {r.returncode}: {r.stderr.decode()[-2000:]}")
    return {"median_s": statistics.median(times), "min_s": min(times), "runs": runs}


def fmt_s(s):
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def fmt_mib(kib):
    return f"{kib / 1024:.1f} MiB"


def check_summary(path):
    with open(path) as f:
        report = json.load(f)
    sent = sum(p["calls"]["sent"] for p in report["pins"])
    ok = sum(p["calls"]["ok"] for p in report["pins"])
    return {"status": report.get("status"), "sent": sent, "ok": ok}


def promptfoo_summary(path):
    with open(path) as f:
        text = f.read()
    nums = {}
    for key in ("passed", "failed", "errors"):
        m = re.search(rf"([\d,]+) {key}", text)
        if m:
            nums[key] = int(m.group(1).replace(",", ""))
    return nums


# ---------------------------------------------------------------- diagnostics

async def _ref_worker(host, port, bodies, lat):
    reader, writer = await asyncio.open_connection(host, port)
    for body in bodies:
        t = time.perf_counter()
        writer.write(b"POST /compat/v1/chat/completions HTTP/1.1\r\nhost: sim\r\n"
                     b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(l.split(b":")[1]) for l in head.split(b"\r\n")
                      if l.lower().startswith(b"content-length:"))
        await reader.readexactly(length)
        lat.append(time.perf_counter() - t)
    writer.close()


def reference_client(addr, calls, conc, model_of):
    """A minimal client: raw HTTP/1.1 over `conc` keep-alive connections, nothing parsed but
    Content-Length. What this host and simulator allow at best."""
    host, port = addr.rsplit(":", 1)
    bodies = [json.dumps({"model": model_of(i), "max_tokens": MAX_TOKENS, "temperature": 1.0,
                          "messages": [{"role": "user", "content": PROBES[i % len(PROBES)]["prompt"]}]}).encode()
              for i in range(calls)]
    lat = []

    async def go():
        await asyncio.gather(*[_ref_worker(host, int(port), bodies[k::conc], lat) for k in range(conc)])

    t0 = time.perf_counter()
    asyncio.run(go())
    wall = time.perf_counter() - t0
    lat.sort()
    return {"wall_s": wall, "p50_s": lat[len(lat) // 2], "p99_s": lat[int(len(lat) * 0.99)], "calls": len(lat)}


def timeline(addr, cmd, cwd):
    """Polls the simulator's counter every 10 ms while cmd runs: when calls start arriving, the
    steady arrival rate, and how long the process lives after the last call arrived."""
    base, k = served(addr), 1
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = []
    while proc.poll() is None:
        samples.append((time.perf_counter() - t0, served(addr) - base - k))
        k += 1
        time.sleep(0.01)
    end = time.perf_counter() - t0
    total = samples[-1][1] if samples else 0
    first = next((t for t, n in samples if n > 0), float("nan"))
    last = next((t for t, n in samples if n >= total), float("nan"))
    mid = [(t, n) for t, n in samples if 0.2 * total < n < 0.8 * total]
    rate = (mid[-1][1] - mid[0][1]) / (mid[-1][0] - mid[0][0]) if len(mid) > 1 else float("nan")
    return {"first_call_s": first, "all_arrived_s": last, "exit_s": end, "calls": total,
            "steady_rate": rate}


def network_check(cmd, cwd, env=None):
    """Runs cmd under strace and returns every non-loopback address it tried to reach."""
    if not shutil.which("strace"):
        return None
    trace = os.path.join(cwd, "strace.txt")
    subprocess.run(["strace", "-f", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", trace] + cmd,
                   cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = set()
    with open(trace) as f:
        for line in f:
            for a in re.findall(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"', line):
                seen.add(a[0] or a[1])
    return sorted(a for a in seen if not (a.startswith("127.") or a == "::1"))


def diagnostics(work, addr, base):
    log("diagnostics")
    d = {}
    seq = reference_client(addr, 100, 1, lambda i: "model-000")
    d["sequential_latency_s"] = seq["p50_s"]
    d["effective_ideal_s"] = math.ceil(CALLS / CONCURRENCY) * seq["p50_s"]
    d["reference"] = [reference_client(addr, CALLS, CONCURRENCY, lambda i: f"model-{i % PINS:03}")
                      for _ in range(RUNS)]
    d["timeline"] = [timeline(addr, [BIN, "check", "-q", "--format", "json"], f"{work}/main")
                     for _ in range(RUNS)]
    fast = f"{work}/latency0"
    write_modelpin(fast, base, PINS, SAMPLES, model=lambda i: "noop-model")
    subprocess.run([BIN, "lock", "-q"], cwd=fast, check=True)
    d["latency0"] = [counted(addr, lambda: measure([BIN, "check", "-q", "--format", "json"], fast,
                                                   stdout=f"{fast}/report.json")) for _ in range(RUNS)]
    small = f"{work}/samples1"
    write_modelpin(small, base, CALLS // len(PROBES), 1, model=lambda i: f"model-{i % PINS:03}")
    subprocess.run([BIN, "lock", "-q"], cwd=small, check=True)
    d["samples1"] = [counted(addr, lambda: measure([BIN, "check", "-q", "--format", "json"], small,
                                                   stdout=f"{small}/report.json")) for _ in range(RUNS)]
    d["scaling"] = {}
    for n in (250, 1000, 2000, 4000):
        sd = f"{work}/scale-{n}"
        write_modelpin(sd, base, n, 1, model=lambda i: "noop-model")
        with open(f"{sd}/pins.toml") as f:
            text = f.read()
        with open(f"{sd}/pins.toml", "w") as f:
            f.write(re.sub(r"probes = \[.*\]", 'probes = ["probes/arith.toml"]', text))
        d["scaling"][n] = timeline(addr, [BIN, "lock", "-q"], sd)
    return d

# ---------------------------------------------------------------- main

def main():
    global BIN
    os.makedirs(OUT, exist_ok=True)
    if os.environ.get("MODELPIN_BIN"):
        log(f"using MODELPIN_BIN={BIN} (no build)")
    else:
        log("cargo build --release")
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    pf_error = None
    if not SKIP_PROMPTFOO:
        pf_error = install_promptfoo()
        if pf_error:
            log(pf_error)

    work = tempfile.mkdtemp(prefix="modelpin-throughput-")
    # Measure a private copy: other work in the tree may rebuild target/release mid-run.
    shutil.copy2(BIN, f"{work}/modelpin")
    BIN = f"{work}/modelpin"
    with open(f"{work}/scenario.json", "w") as f:
        json.dump(scenario(), f)
    sim = subprocess.Popen([BIN, "sim", "--scenario", f"{work}/scenario.json", "--listen", "127.0.0.1:0"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    addr = sim.stdout.readline().strip()
    base = f"http://{addr}/compat/v1"
    log(f"simulator on {addr}; workdir {work}")
    try:
        results = run_all(work, addr, base, pf_error, sim.pid)
    finally:
        sim.terminate()
        sim.wait(timeout=10)
    results["meta"] = {
        "date": datetime.date.today().isoformat(),
        "host": f"{platform.machine()}, {os.cpu_count()} cores",
        "modelpin": subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout.strip(),
        "git": os.environ.get("MODELPIN_REV") or subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "node": subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip(),
        "promptfoo": None if (SKIP_PROMPTFOO or pf_error) else PROMPTFOO_VERSION,
        "promptfoo_error": pf_error,
        "workdir": work,
    }
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    table = render(results)
    with open(os.path.join(OUT, "results.md"), "w") as f:
        f.write(table)
    print(table)
    if os.environ.get("KEEP_WORK") != "1":
        shutil.rmtree(work, ignore_errors=True)


def run_all(work, addr, base, pf_error, sim_pid):
    main_dir = f"{work}/main"
    write_modelpin(main_dir, base, PINS, SAMPLES)
    use_pf = not SKIP_PROMPTFOO and not pf_error
    pf_env = promptfoo_env(work)
    if use_pf:
        write_promptfoo(f"{work}/promptfoo.json", base, [f"model-{i:03}" for i in range(PINS)])

    def with_sim_cpu(fn):
        c0 = cpu_s(sim_pid) if sim_pid else 0.0
        r = fn()
        r["sim_cpu_s"] = (cpu_s(sim_pid) - c0) if sim_pid else float("nan")
        return r

    rows = {"lock": [], "check": [], "promptfoo": []}
    for run in range(RUNS):
        log(f"run {run + 1}/{RUNS}: modelpin lock")
        r = counted(addr, lambda: with_sim_cpu(lambda: measure([BIN, "lock", "-q"], main_dir)))
        if r["exit"] != 0:
            raise SystemExit(f"modelpin lock failed (exit {r['exit']}); see {r['stderr']}")
        rows["lock"].append(r)
        log(f"  wall {r['wall_s']:.2f} s, cpu {r['cpu_s']:.2f} s, rss {fmt_mib(r['peak_tree_rss_kib'])}, "
            f"calls {r['sim_calls']}")

        log(f"run {run + 1}/{RUNS}: modelpin check")
        report = f"{OUT}/check-{run}.json"
        r = counted(addr, lambda: with_sim_cpu(
            lambda: measure([BIN, "check", "-q", "--format", "json"], main_dir, stdout=report)))
        if r["exit"] not in (0, 1):
            raise SystemExit(f"modelpin check failed (exit {r['exit']}); see {r['stderr']}")
        r.update(check_summary(report))
        rows["check"].append(r)
        log(f"  wall {r['wall_s']:.2f} s, cpu {r['cpu_s']:.2f} s, rss {fmt_mib(r['peak_tree_rss_kib'])}, "
            f"calls {r['sim_calls']}, status {r['status']}")

        if use_pf:
            log(f"run {run + 1}/{RUNS}: promptfoo eval")
            out = f"{OUT}/promptfoo-{run}.txt"
            r = counted(addr, lambda: with_sim_cpu(lambda: measure(
                promptfoo_cmd(f"{work}/promptfoo.json") + ["--repeat", str(SAMPLES)], work, env=pf_env,
                stdout=out)))
            r.update(promptfoo_summary(out))
            rows["promptfoo"].append(r)
            log(f"  wall {r['wall_s']:.2f} s, cpu {r['cpu_s']:.2f} s, rss {fmt_mib(r['peak_tree_rss_kib'])}, "
                f"calls {r['sim_calls']}, processes {r['processes']}, exit {r['exit']}")

    log("start-up")
    noop_dir = f"{work}/noop"
    write_modelpin(noop_dir, base, 1, 1, model=lambda i: "noop-model")
    with open(f"{noop_dir}/pins.toml") as f:  # one probe only
        text = f.read()
    with open(f"{noop_dir}/pins.toml", "w") as f:
        f.write(re.sub(r"probes = \[.*\]", 'probes = ["probes/arith.toml"]', text))
    subprocess.run([BIN, "lock", "-q"], cwd=noop_dir, check=True)
    start = {
        "modelpin check --help": startup([BIN, "check", "--help"], noop_dir, STARTUP_RUNS),
        "modelpin check, no-op": startup([BIN, "check", "-q", "--format", "json"], noop_dir, STARTUP_RUNS),
    }
    if use_pf:
        write_promptfoo(f"{work}/noop.json", base, ["noop-model"], tests=PROBES[:1])
        pf_runs = max(3, STARTUP_RUNS // 4)
        start["promptfoo eval --help"] = startup([promptfoo_bin(), "eval", "--help"], work, pf_runs, env=pf_env)
        start["promptfoo eval, no-op"] = startup(promptfoo_cmd(f"{work}/noop.json"), work, pf_runs, env=pf_env)
    net = {"modelpin check": network_check([BIN, "check", "-q", "--format", "json"], noop_dir)}
    if use_pf:
        net["promptfoo eval"] = network_check(promptfoo_cmd(f"{work}/noop.json"), work, env=pf_env)
    res = {"rows": rows, "startup": start, "network": net}
    if DIAGNOSTICS:
        res["diagnostics"] = diagnostics(work, addr, base)
    return res


def render(res):
    rows, meta = res["rows"], res["meta"]
    have_pf = bool(rows["promptfoo"])
    n = len(rows["check"])
    lines = [
        f"Run {meta['date']} on {meta['host']} ({meta['modelpin']}, git {meta['git']}; "
        f"node {meta['node']}, promptfoo {meta['promptfoo'] or 'not run'}). "
        f"Workload: {PINS} pins x {len(PROBES)} probes x {SAMPLES} samples = {CALLS:,} calls, "
        f"{LATENCY_MS} ms simulated latency, concurrency {CONCURRENCY}; "
        f"ideal = ceil({CALLS:,} / {CONCURRENCY}) x {LATENCY_MS} ms = {IDEAL_S:.2f} s. "
        f"Medians of {n} run(s).",
        "",
    ]
    head = "| metric | modelpin lock | modelpin check | " + ("promptfoo eval | promptfoo / check | " if have_pf else "") + "target |"
    lines += [head, "|" + "---|" * (head.count("|") - 1)]

    def row(name, key, fmt, target="", ratio=True):
        cells = [fmt(med(rows["lock"], key)), fmt(med(rows["check"], key))]
        if have_pf:
            cells.append(fmt(med(rows["promptfoo"], key)))
            cells.append(f"{med(rows['promptfoo'], key) / med(rows['check'], key):.1f}x" if ratio else "")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {target} |")

    def calls(r):
        return ", ".join(str(x["sim_calls"]) for x in r)

    cells = [calls(rows["lock"]), calls(rows["check"])] + ([calls(rows["promptfoo"]), ""] if have_pf else [])
    lines.append("| generation calls seen by the simulator (per run) | " + " | ".join(cells) + " | 6000 each |")
    row("wall time", "wall_s", fmt_s)
    for r in rows.values():
        for x in r:
            x["wall_ratio"] = x["wall_s"] / IDEAL_S
    row(f"wall / ideal ({IDEAL_S:.2f} s)", "wall_ratio", lambda v: f"{v:.3f}", "check ≤ 1.15", ratio=False)
    row("CPU time (user + sys)", "cpu_s", lambda v: f"{v:.2f} s", "promptfoo / check ≥ 10x")
    row("peak RSS (process tree)", "peak_tree_rss_kib", fmt_mib, "promptfoo / check ≥ 5x")
    row("processes in tree", "processes", lambda v: f"{v:.0f}", ratio=False)
    row("simulator CPU during the run", "sim_cpu_s", lambda v: f"{v:.2f} s", ratio=False)
    lines += ["", "| start-up | median | min | runs |", "|---|---|---|---|"]
    for name, s in res["startup"].items():
        lines.append(f"| `{name}` | {fmt_s(s['median_s'])} | {fmt_s(s['min_s'])} | {s['runs']} |")
    for tool, bad in res["network"].items():
        lines.append("")
        if bad is None:
            lines.append(f"Network check for {tool}: skipped (no strace).")
        else:
            lines.append(f"Network check (strace of the no-op run): {tool} reached "
                         + ("loopback only." if not bad else "NON-LOOPBACK ADDRESSES: " + ", ".join(bad)))
    if "diagnostics" in res:
        lines += render_diagnostics(res["diagnostics"], rows)
    if meta.get("promptfoo_error"):
        lines += ["", f"promptfoo not measured: {meta['promptfoo_error']}"]
    per_run = ["", "Per run (wall s / CPU s / peak RSS MiB / calls):", ""]
    for tool, rs in rows.items():
        for i, x in enumerate(rs):
            per_run.append(f"- {tool} #{i + 1}: {x['wall_s']:.2f} / {x['cpu_s']:.2f} / "
                           f"{x['peak_tree_rss_kib'] / 1024:.1f} / {x['sim_calls']}"
                           + (f" (exit {x['exit']})" if x["exit"] else ""))
    return "\n".join(lines + per_run) + "\n"


def render_diagnostics(d, rows):
    check_wall = med(rows["check"], "wall_s")
    ref_wall = med(d["reference"], "wall_s")
    tl = d["timeline"]
    lines = ["", "Where modelpin's wall time goes (medians of the same number of runs):", "",
             "| diagnostic | value |", "|---|---|",
             f"| one call at a time to the 50 ms model (median of 100) | {d['sequential_latency_s'] * 1000:.2f} ms |",
             f"| effective ideal: ceil({CALLS:,} / {CONCURRENCY}) x that | {d['effective_ideal_s']:.2f} s |",
             f"| reference client (raw HTTP/1.1, {CONCURRENCY} keep-alive connections, Python asyncio), "
             f"{CALLS:,} calls | {ref_wall:.2f} s; per call p50 {med(d['reference'], 'p50_s') * 1000:.1f} ms, "
             f"p99 {med(d['reference'], 'p99_s') * 1000:.1f} ms |",
             f"| `modelpin check` / effective ideal | {check_wall / d['effective_ideal_s']:.3f} |",
             f"| `modelpin check` / reference client | {check_wall / ref_wall:.3f} |",
             f"| check timeline: first call reaches the simulator after | ≤ {med(tl, 'first_call_s') * 1000:.0f} ms |",
             f"| check timeline: steady arrival rate (20-80% of calls) | {med(tl, 'steady_rate'):.0f} calls/s "
             f"(nominal {CONCURRENCY / LATENCY_MS * 1000:.0f}/s = one call per slot every "
             f"{CONCURRENCY / med(tl, 'steady_rate') * 1000:.1f} ms) |",
             f"| check timeline: last call arrives → process exits | "
             f"{(med(tl, 'exit_s') - med(tl, 'all_arrived_s')) * 1000:.0f} ms (includes the call's own {LATENCY_MS} ms) |",
             f"| `modelpin check`, same {CALLS:,} calls at 0 ms latency | wall {med(d['latency0'], 'wall_s'):.2f} s, "
             f"CPU {med(d['latency0'], 'cpu_s'):.2f} s |",
             f"| `modelpin check`, {CALLS // len(PROBES):,} pins x {len(PROBES)} probes x 1 sample (same calls) | "
             f"wall {med(d['samples1'], 'wall_s'):.2f} s = {med(d['samples1'], 'wall_s') / IDEAL_S:.3f} x ideal, "
             f"CPU {med(d['samples1'], 'cpu_s'):.2f} s |",
             ]
    for n, t in d["scaling"].items():
        lines.append(f"| `modelpin lock`, {n} pins x 1 probe x 1 sample at 0 ms: first call after / exit | "
                     f"{t['first_call_s'] * 1000:.0f} ms / {t['exit_s'] * 1000:.0f} ms |")
    return lines


if __name__ == "__main__":
    main()
