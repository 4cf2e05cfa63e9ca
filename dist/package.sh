#!/bin/sh
# Packs one release archive: dist/package.sh TARGET BINARY OUT_DIR
#
# Writes OUT_DIR/modelpin-TARGET.tar.gz holding modelpin-TARGET/ with the binary, both licenses,
# the README and what it links to (docs/, examples/, BENCHMARKS.md, SECURITY.md, the example
# pins.toml and probes/), so every link of the unpacked documents resolves: the layout
# install.sh, the GitHub Action and cargo-binstall (Cargo.toml's [package.metadata.binstall])
# unpack. The archive is reproducible: entries sorted, owned by 0:0,
# dated SOURCE_DATE_EPOCH (default: the last commit's time), gzip without a name or time.
set -eu

[ $# -eq 3 ] || { echo "usage: dist/package.sh TARGET BINARY OUT_DIR" >&2; exit 2; }
target=$1
binary=$2
out=$3
root=$(cd "$(dirname "$0")/.." && pwd)

case "$target" in
  *[!a-z0-9_-]*) echo "package.sh: not a target triple: $target" >&2; exit 2 ;;
esac
[ -f "$binary" ] || { echo "package.sh: no binary at $binary" >&2; exit 1; }
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}

name="modelpin-$target"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
cp "$binary" "$stage/$name/modelpin"
chmod 0755 "$stage/$name/modelpin"
for file in LICENSE-MIT LICENSE-APACHE README.md BENCHMARKS.md SECURITY.md pins.toml; do
  cp "$root/$file" "$stage/$name/$file"
done
for dir in docs examples probes; do
  cp -R "$root/$dir" "$stage/$name/$dir"
done
find "$stage/$name" -type d -exec chmod 0755 {} +
find "$stage/$name" -type f ! -name modelpin -exec chmod 0644 {} +
mkdir -p "$out"
# Two steps, not a pipe: sh has no pipefail, and a tar that failed must not leave a valid gzip
# of nothing to be published.
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=ustar \
  -C "$stage" -cf "$stage/$name.tar" "$name"
gzip -9n < "$stage/$name.tar" > "$out/$name.tar.gz.partial"
mv "$out/$name.tar.gz.partial" "$out/$name.tar.gz"
echo "$out/$name.tar.gz"
