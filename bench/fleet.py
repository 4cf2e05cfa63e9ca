#!/usr/bin/env python3
"""A fleet on PostgreSQL against one daemon on sled, side by side in one run. Three parts:

1. Provider calls. Two simulators, two projects of CALL_PINS pins audited every 10 s: one
   `modelpin daemon` on sled against simulator A, two daemons on one PostgreSQL database against
   simulator B, started together and stopped together after CALL_SECONDS (default 600). Each
   simulator's own answer counter (the serial in every answer's id, read with one sentinel call
   before and one after) gives the calls each setup made.
2. Failover. Two daemons on PostgreSQL, one pin audited every second, lease LEASE seconds. The
   leader is killed with SIGKILL; the time from the kill to the first audit the survivor ran
   (its `modelpin_audits_total` rising) is measured; the killed daemon is started again as the
   new standby. FAILOVERS times. Target: at most 2 x lease + one schedule tick.
3. Pages from the store. 100 pins x 30 audits stored on sled by a daemon, copied with
   `modelpin store copy` into PostgreSQL; then a daemon on the sled store and a standby of a
   two-daemon fleet on the copy (hourly schedule, so neither adds audits) answer `/`, a pin page
   and `/api/history`, requests alternating between the two, PAGE_REQUESTS each. Target: the
   standby's median within 1.5x the sled daemon's.

The PostgreSQL server is Debian's (`/usr/lib/postgresql/*/bin`), a cluster of its own in a
temporary directory on a loopback port, run as the `postgres` user when this runs as root, and
stopped at the end. Prints Markdown tables. Run from the repository root:

    python3 bench/fleet.py
"""
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "throughput"))
from daemon_bench import ARITH, BIN, build, free_port, scenario  # noqa: E402
from run import SENTINEL, served  # noqa: E402  (bench/throughput/run.py)

CALL_PINS = int(os.environ.get("CALL_PINS", "10"))
CALL_SECONDS = int(os.environ.get("CALL_SECONDS", "600"))
LEASE = int(os.environ.get("LEASE", "5"))
CALL_LEASE = int(os.environ.get("CALL_LEASE", "15"))
PARTS = os.environ.get("PARTS", "calls,failover,pages").split(",")
FAILOVERS = int(os.environ.get("FAILOVERS", "8"))
PAGE_PINS, PAGE_AUDITS = 100, 30
PAGE_REQUESTS = int(os.environ.get("PAGE_REQUESTS", "200"))
USER = "modelpin"


def log(msg):
    print(f"[fleet] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- PostgreSQL

class Postgres:
    """A cluster of its own: initdb, started on a free loopback port, stopped on exit."""

    def __enter__(self):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not bins:
            sys.exit("PostgreSQL's server binaries are not installed (apt install postgresql)")
        self.bin = os.path.dirname(bins[-1])
        self.dir = tempfile.mkdtemp(prefix="modelpin-fleet-pg-")
        self.root = os.geteuid() == 0
        if self.root:
            shutil.chown(self.dir, "postgres")
        self.data = f"{self.dir}/data"
        self.server("initdb", "-D", self.data, "-U", USER, "-A", "trust", "--no-sync",
                    "-E", "UTF8", "--locale=C")
        self.port = free_port()
        opts = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir} -c fsync=off"
        self.server("pg_ctl", "-D", self.data, "-l", f"{self.dir}/log", "-w", "-o", opts, "start")
        return self

    def server(self, program, *args):
        cmd = [f"{self.bin}/{program}", *args]
        if self.root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

    def database(self, name):
        subprocess.run([f"{self.bin}/createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", USER,
                        name], check=True)
        return f"postgres://{USER}@127.0.0.1:{self.port}/{name}"

    def __exit__(self, *_):
        self.server("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------- simulator and projects

class Sim:
    def __init__(self, pins):
        self.dir = tempfile.mkdtemp(prefix="modelpin-fleet-sim-")
        world = scenario(pins)
        world["routes"][SENTINEL] = {"model": "m", "report": "requested"}
        with open(f"{self.dir}/scenario.json", "w") as f:
            json.dump(world, f)
        self.proc = subprocess.Popen([BIN, "sim", "--scenario", f"{self.dir}/scenario.json"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addr = self.proc.stdout.readline().strip()
        self.sentinels = 0  # counting calls made so far

    def served(self):
        """Generation calls answered so far, the sentinel calls themselves excluded."""
        self.sentinels += 1
        return served(self.addr) - self.sentinels

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


class Daemon:
    """`modelpin daemon` in `work`, on the port it picked (read back from its start line)."""

    def __init__(self, work):
        self.proc = subprocess.Popen([BIN, "daemon"], cwd=work, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.port, found = None, threading.Event()

        def read():
            for line in self.proc.stderr:
                m = "daemon started: " in line and re.search(r"url=http://[^/\s]+:(\d+)", line)
                if m and not found.is_set():
                    self.port = int(m.group(1))
                    found.set()
        threading.Thread(target=read, daemon=True).start()
        if not found.wait(60):
            raise RuntimeError(f"the daemon in {work} did not start")

    def get(self, path, timeout=10):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except OSError:
            return 0, b""

    def role(self):
        status, body = self.get("/healthz", timeout=2)
        text = body.decode(errors="replace")
        return next((r for r in ("leader", "standby") if status == 200 and r in text), None)

    def audits(self):
        """Audits this daemon ran, from `modelpin_audits_total`; None when it does not answer."""
        status, body = self.get("/metrics", timeout=2)
        if status != 200:
            return None
        return sum(float(v) for v in re.findall(r"^modelpin_audits_total\{[^}]*\} (\S+)$",
                                                 body.decode(), re.M))

    def gauge(self, name):
        status, body = self.get("/metrics", timeout=5)
        m = status == 200 and re.search(rf"^{name} (\S+)$", body.decode(), re.M)
        return float(m.group(1)) if m else None

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)


def project(sim, pins, schedule, store, lease=None):
    """A project directory: `pins` pins (one probe, one sample each) on `sim`, locked."""
    work = tempfile.mkdtemp(prefix="modelpin-fleet-")
    os.makedirs(f"{work}/probes")
    with open(f"{work}/probes/arith.toml", "w") as f:
        f.write(ARITH)
    lines = ["version = 1", "[settings]", f'schedule = "{schedule}"', 'metrics = "127.0.0.1:0"',
             f'store = "{store}"']
    if lease:
        lines.append(f'lease = "{lease}s"')
    lines += ["[providers.sim]", 'kind = "openai-compatible"',
              f'base_url = "http://{sim.addr}/compat/v1"']
    for i in range(pins):
        lines += ["[[pin]]", f'id = "pin-{i:03}"', 'provider = "sim"', f'model = "model-{i:03}"',
                  'probes = ["probes/arith.toml"]', "samples = 1"]
    with open(f"{work}/pins.toml", "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run([BIN, "lock", "-q"], cwd=work, check=True)
    return work


def clone(work, schedule, store, lease=None):
    """A copy of project `work` (its pins.toml, lock and probes: the same lock the stored audits
    were judged against) with another schedule and store."""
    copy = tempfile.mkdtemp(prefix="modelpin-fleet-")
    shutil.copytree(f"{work}/probes", f"{copy}/probes")
    shutil.copy(f"{work}/modelpin.lock", copy)
    with open(f"{work}/pins.toml") as f:
        text = f.read()
    text = re.sub(r'^schedule = .*$', f'schedule = "{schedule}"', text, count=1, flags=re.M)
    extra = f'\nlease = "{lease}s"' if lease else ""
    text = re.sub(r'^store = .*$', f'store = "{store}"{extra}', text, count=1, flags=re.M)
    with open(f"{copy}/pins.toml", "w") as f:
        f.write(text)
    return copy


def wait(what, predicate, limit=120, poll=0.05):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise RuntimeError(f"timed out waiting for {what}")


def leader_and_standby(a, b):
    def settled():
        roles = [a.role(), b.role()]
        return roles if sorted(roles) == ["leader", "standby"] else None

    roles = wait("one leader and one standby", settled)
    return (a, b) if roles[0] == "leader" else (b, a)


# ---------------------------------------------------------------- 1. provider calls

def calls_part(pg, result):
    sim_a, sim_b = Sim(CALL_PINS), Sim(CALL_PINS)
    every = "*/10 * * * * *"
    alone = project(sim_a, CALL_PINS, every, "store")
    shared = pg.database("calls")
    fleet = project(sim_b, CALL_PINS, every, shared, CALL_LEASE)
    before = sim_a.served(), sim_b.served()
    daemons = [Daemon(alone), Daemon(fleet), Daemon(fleet)]
    t0 = time.monotonic()
    time.sleep(CALL_SECONDS)
    terms = [d.gauge("modelpin_lease_term") for d in daemons[1:]]
    for d in daemons:
        d.stop()
    wall = time.monotonic() - t0
    calls = sim_a.served() - before[0], sim_b.served() - before[1]
    stored = [history_count(alone), history_count(fleet)]
    result.update(calls=calls, stored=stored, wall=wall, term=max(t or 0 for t in terms))
    sim_a.stop()
    sim_b.stop()


def history_count(work):
    out = subprocess.run([BIN, "history", "--format", "json", "--since", "1d"], cwd=work,
                         capture_output=True, text=True, check=True).stdout
    return len(json.loads(out))


# ---------------------------------------------------------------- 2. failover

def failover_part(pg):
    sim = Sim(1)
    work = project(sim, 1, "* * * * * *", pg.database("failover"), LEASE)
    a, b = Daemon(work), Daemon(work)
    times = []
    for n in range(FAILOVERS):
        leader, standby = leader_and_standby(a, b)
        wait("the leader's first audit", lambda: (leader.audits() or 0) >= 1)
        ran = standby.audits() or 0
        t0 = time.monotonic()
        leader.kill()
        wait("the survivor's first audit", lambda: (standby.audits() or 0) > ran, limit=60)
        times.append(time.monotonic() - t0)
        log(f"failover {n + 1}: {times[-1]:.2f} s")
        a, b = standby, Daemon(work)
    a.stop()
    b.stop()
    sim.stop()
    return times


# ---------------------------------------------------------------- 3. pages from the store

def pages_part(pg):
    sim = Sim(PAGE_PINS)
    work = project(sim, PAGE_PINS, "* * * * * *", "store")
    filler = Daemon(work)
    wait("100 pins x 30 audits", lambda: (filler.audits() or 0) >= PAGE_PINS * PAGE_AUDITS,
         limit=600, poll=0.5)
    filler.stop()
    stored = history_count(work)
    url = pg.database("pages")
    subprocess.run([BIN, "store", "copy", "store", url], cwd=work, check=True,
                   stdout=subprocess.DEVNULL)
    hourly = "0 0 * * * *"
    on_sled = clone(work, hourly, f"{work}/store")
    on_pg = clone(work, hourly, url, LEASE)
    sled = Daemon(on_sled)
    a, b = Daemon(on_pg), Daemon(on_pg)
    _, standby = leader_and_standby(a, b)
    paths = ["/", "/pins/pin-042", "/api/history"]
    for d in (sled, standby):  # both answer every page before any is timed
        for path in paths:
            status, _ = d.get(path, timeout=60)
            assert status == 200, (path, status)
    seen = {(name, path): [] for name in ("sled", "standby") for path in paths}
    for _ in range(PAGE_REQUESTS):
        for path in paths:
            for name, d in (("sled", sled), ("standby", standby)):
                t0 = time.perf_counter()
                status, body = d.get(path, timeout=60)
                seen[name, path].append(time.perf_counter() - t0)
                assert status == 200, (name, path, status)
    records = len(json.loads(standby.get("/api/history")[1]))
    for d in (sled, a, b):
        d.stop()
    sim.stop()
    return stored, records, paths, seen


def ms(xs, q):
    xs = sorted(xs)
    return 1000 * xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    build()
    with Postgres() as pg:
        result = {}
        calls = threading.Thread(target=calls_part, args=(pg, result))
        if "calls" in PARTS:
            calls.start()
            log(f"provider calls: {CALL_SECONDS} s in the background")
        if "failover" in PARTS:
            times = failover_part(pg)
            log("failover done")
        if "pages" in PARTS:
            pages = pages_part(pg)
            log("pages done")
        if "calls" in PARTS:
            calls.join()
    if "calls" in PARTS:
        print_calls(result)
    if "failover" in PARTS:
        print_failover(times)
    if "pages" in PARTS:
        print_pages(*pages)


def print_calls(result):

    (alone, fleet), (stored_a, stored_f) = result["calls"], result["stored"]
    print(f"\n### Provider calls ({CALL_PINS} pins every 10 s, {result['wall']:.0f} s, lease "
          f"{CALL_LEASE} s; leadership changes: {int(result['term']) - 1})\n")
    print("| setup | provider calls | audits stored | calls per audit |")
    print("|---|---|---|---|")
    print(f"| 1 daemon, sled | {alone} | {stored_a} | {alone / max(stored_a, 1):.2f} |")
    print(f"| 2 daemons, PostgreSQL | {fleet} | {stored_f} | {fleet / max(stored_f, 1):.2f} |")
    print(f"| **fleet / alone** | **{fleet / max(alone, 1):.2f}x** | "
          f"{stored_f / max(stored_a, 1):.2f}x | |")


def print_failover(times):
    bound = 2 * LEASE + 1
    print(f"\n### Failover (lease {LEASE} s, schedule every 1 s; bound 2 x lease + 1 tick = "
          f"{bound} s)\n")
    print("| failovers | median | min | max | within bound |")
    print("|---|---|---|---|---|")
    print(f"| {len(times)} | {statistics.median(times):.2f} s | {min(times):.2f} s | "
          f"{max(times):.2f} s | {sum(t <= bound for t in times)} of {len(times)} |")


def print_pages(stored, records, paths, seen):
    print(f"\n### Pages ({stored} audits of {PAGE_PINS} pins; {PAGE_REQUESTS} requests each, "
          "alternating)\n")
    print("| path | sled median | sled p95 | standby median | standby p95 | median ratio |")
    print("|---|---|---|---|---|---|")
    for path in paths:
        s, p = seen["sled", path], seen["standby", path]
        print(f"| `{path}` | {ms(s, 0.5):.1f} ms | {ms(s, 0.95):.1f} ms | {ms(p, 0.5):.1f} ms | "
              f"{ms(p, 0.95):.1f} ms | **{ms(p, 0.5) / ms(s, 0.5):.2f}x** |")
    print(f"\n`/api/history` default page: {records} records.")


if __name__ == "__main__":
    main()
