#!/usr/bin/env python3
"""Size of modelpin.lock (version 3) for 1, 10 and 100 pins, from a real one-pin lock.

A lock is the sum of its pins' entries (the contract under `pins`, the blobs under `samples`),
so N pins are the measured pin's entry under N names, written the way modelpin writes the file
(pretty JSON, two-space indent, fields in their order, map keys sorted). Reports bytes and the lines a reviewer reads (the
contract: everything before `"samples"`).

    python3 bench/lock_size.py path/to/modelpin.lock
"""

import json
import sys


def render(lock: dict) -> str:
    return json.dumps(lock, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    lock = json.load(open(sys.argv[1]))
    assert lock["lock_version"] == 3, "a version-3 lock, written by `modelpin lock`"
    (name, pin), = lock["pins"].items()
    samples = lock["samples"][name]
    print(f"{'pins':>5}  {'bytes':>9}  {'KB/pin':>6}  {'lines':>6}  {'contract lines':>14}")
    for n in (1, 10, 100):
        names = [name if n == 1 else f"{name}-{i:03}" for i in range(n)]
        many = dict(lock, pins={k: pin for k in names}, samples={k: samples for k in names})
        text = render(many)
        contract = text[: text.index('\n  "samples"')].count("\n") + 1
        print(f"{n:>5}  {len(text.encode()):>9}  {len(text.encode()) / n / 1000:>6.1f}  "
              f"{text.count(chr(10)):>6}  {contract:>14}")


if __name__ == "__main__":
    main()
