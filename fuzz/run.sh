#!/usr/bin/env bash
# A bounded fuzz run of every target: fuzz/run.sh [RUNS] (inputs per target; default 20000).
#
# Builds the targets with cargo-fuzz on the stable toolchain (`--sanitizer none`: libFuzzer's
# coverage guidance without a sanitizer, which needs nightly) in the dev profile, seeds each
# corpus from files in the repository, and runs each target for RUNS inputs from a fixed seed, so
# a run does the same work every time (at most 10 minutes each). A crash, a failed assertion, an
# input slower than 10 s or a process above 2 GiB fails the run; the input that did it is kept in
# $FUZZ_ARTIFACTS (default fuzz/artifacts/) and printed in the log's last lines. Longer runs: see
# BENCHMARKS.md, "Fuzzing".
set -euo pipefail

runs=${1:-20000}
case "$runs" in
  '' | *[!0-9]* | 0) echo "usage: fuzz/run.sh [RUNS] (a positive number of inputs per target)" >&2; exit 2 ;;
esac
fuzz=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$fuzz")
artifacts=${FUZZ_ARTIFACTS:-$fuzz/artifacts}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Seeds, one file each (libFuzzer reads a corpus directory flat): recorded reply bodies, the
# example configs, and the sample OTLP export behind the otlp target's selector byte (odd is JSON,
# 2 set is gzip).
mkdir -p "$work/seeds/parse_reply" "$work/seeds/config" "$work/seeds/otlp" "$artifacts"
n=0
while IFS= read -r -d '' file; do
  n=$((n + 1))
  cp "$file" "$work/seeds/parse_reply/$n"
done < <(find "$root/tests/fixtures/real" -type f ! -name '*.md' ! -name '*.headers.txt' -print0)
cp "$root/pins.toml" "$work/seeds/config/example"
cp "$root/examples/kubernetes/single.pins.toml" "$root/examples/kubernetes/fleet.pins.toml" \
  "$work/seeds/config/"
{ printf '\001'; cat "$root/examples/traffic-otlp.json"; } > "$work/seeds/otlp/json"
{ printf '\003'; gzip -c "$root/examples/traffic-otlp.json"; } > "$work/seeds/otlp/json-gzip"

cd "$fuzz"
cargo fuzz build --sanitizer none --dev
for target in parse_reply config otlp; do
  mkdir -p "$work/corpus/$target"
  echo "fuzz: $target, $runs inputs from $(find "$work/seeds/$target" -type f | wc -l) seeds"
  status=0
  cargo fuzz run --sanitizer none --dev "$target" "$work/corpus/$target" "$work/seeds/$target" -- \
    -runs="$runs" -seed=20261201 -max_total_time=600 -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$artifacts/$target-" -print_final_stats=1 \
    > "$work/$target.log" 2>&1 || status=$?
  grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$work/$target.log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$work/$target.log" >&2
    echo "fuzz: $target failed; the input is in $artifacts/" >&2
    exit 1
  fi
done
