#!/usr/bin/env python3
"""Every row of the built-in lifecycle table with its source class.

A row is `primary` when it names the provider's own page (`primary`, with the day its text was
read) and `secondary` otherwise; only primary rows can make a finding an error (see
`SourceClass` in src/lifecycle/mod.rs). Prints one line per row, then the counts by provider.

    python3 bench/lifecycle_sources.py            # rows and counts
    python3 bench/lifecycle_sources.py --counts   # counts only (BENCHMARKS.md)
"""

import pathlib
import sys
import tomllib
from collections import Counter

TABLE = pathlib.Path(__file__).resolve().parent.parent / "src" / "lifecycle" / "builtin.toml"


def main() -> None:
    rows = tomllib.loads(TABLE.read_text())["fact"]
    counts: Counter = Counter()
    for row in rows:
        klass = "primary" if "primary" in row else "secondary"
        counts[(row["provider"], klass)] += 1
        if "--counts" not in sys.argv:
            where = row.get("primary", row["source"])
            print(f"{klass:9}  {row['provider']:10}  {row.get('id', '-'):50}  {where}")
    providers = sorted({p for p, _ in counts})
    print(f"\n{'provider':10}  {'primary':>7}  {'secondary':>9}")
    for provider in providers:
        print(f"{provider:10}  {counts[(provider, 'primary')]:>7}  {counts[(provider, 'secondary')]:>9}")
    total_p = sum(n for (_, k), n in counts.items() if k == "primary")
    total_s = sum(n for (_, k), n in counts.items() if k == "secondary")
    print(f"{'all':10}  {total_p:>7}  {total_s:>9}  ({len(rows)} rows)")


if __name__ == "__main__":
    main()
