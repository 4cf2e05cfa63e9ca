#!/usr/bin/env python3
"""Idle footprint of `modelpin daemon` with 100 pins scheduled: resident memory and CPU.

Starts the simulator (`modelpin sim`), locks 100 pins, starts the daemon, waits until every pin's
start-up audit is stored, then samples /proc for IDLE_SECONDS while nothing is due (hourly
schedule). Prints a Markdown table row. Run from the repository root:

    python3 bench/daemon_idle.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from daemon_bench import Project, cpu_ticks, rss_kib  # noqa: E402

PINS = 100
IDLE_SECONDS = int(os.environ.get("IDLE_SECONDS", "60"))


def main():
    with Project("modelpin-idle-", PINS, "0 0 * * * *") as p:
        if not p.wait_for_audits(PINS):
            sys.exit("start-up audits did not finish")
        time.sleep(2)
        ticks0, t0 = cpu_ticks(p.daemon.pid), time.time()
        peak = 0
        while time.time() - t0 < IDLE_SECONDS:
            peak = max(peak, rss_kib(p.daemon.pid))
            time.sleep(1)
        cpu = (cpu_ticks(p.daemon.pid) - ticks0) / os.sysconf("SC_CLK_TCK")
        wall = time.time() - t0
        print(f"| {PINS} pins, idle {wall:.0f} s | RSS {peak / 1024:.1f} MiB | CPU {100 * cpu / wall:.2f}% of a core |")


if __name__ == "__main__":
    main()
