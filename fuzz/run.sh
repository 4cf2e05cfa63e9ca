#!/usr/bin/env bash
# A bounded fuzz run of every target: fuzz/run.sh SECONDS (per target; default 20).
#
# Builds the targets with cargo-fuzz on the stable toolchain (`--sanitizer none`: libFuzzer's
# coverage guidance without a sanitizer, which needs nightly) in the dev profile, seeds each
# corpus from files in the repository, and runs each target for SECONDS. A crash, a failed
# assertion, a timeout or a leak of more than 2 GiB fails the run and leaves the input under
# fuzz/artifacts/TARGET/. Longer runs: see BENCHMARKS.md, "Fuzzing".
set -euo pipefail

seconds=${1:-20}
case "$seconds" in
  '' | *[!0-9]*) echo "usage: fuzz/run.sh [SECONDS]" >&2; exit 2 ;;
esac
fuzz=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$fuzz")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Seeds, one file each (libFuzzer reads a corpus directory flat).
mkdir -p "$work/seeds/parse_reply" "$work/seeds/config" "$work/seeds/otlp"
n=0
while IFS= read -r -d '' file; do
  n=$((n + 1))
  cp "$file" "$work/seeds/parse_reply/$n"
done < <(find "$root/tests/fixtures/real" -type f ! -name '*.md' -print0)
cp "$root/pins.toml" "$work/seeds/config/example"
for file in "$root"/examples/kubernetes/*.pins.toml; do
  cp "$file" "$work/seeds/config/$(basename "$file")"
done
# The otlp target's first byte picks the encoding: odd is JSON, 2 set is gzip.
{ printf '\001'; cat "$root/examples/traffic-otlp.json"; } > "$work/seeds/otlp/json"
{ printf '\003'; gzip -c "$root/examples/traffic-otlp.json"; } > "$work/seeds/otlp/json-gzip"

cd "$fuzz"
cargo fuzz build --sanitizer none --dev
for target in parse_reply config otlp; do
  mkdir -p "$work/corpus/$target"
  echo "fuzz: $target for ${seconds}s from $(find "$work/seeds/$target" -type f | wc -l) seeds"
  status=0
  cargo fuzz run --sanitizer none --dev "$target" "$work/corpus/$target" "$work/seeds/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    > "$work/$target.log" 2>&1 || status=$?
  grep -E '^stat::(number_of_executed_units|peak_rss_mb|new_units_added)' "$work/$target.log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$work/$target.log" >&2
    echo "fuzz: $target failed (the input is under fuzz/artifacts/$target/)" >&2
    exit 1
  fi
done
