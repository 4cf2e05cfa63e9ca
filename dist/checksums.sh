#!/bin/sh
# Writes OUT_DIR/SHA256SUMS over every release file in OUT_DIR (the archives and install.sh), in
# sha256sum's own format ("<hex>  <name>", sorted by name): what install.sh and the GitHub Action
# check a download against, and what the release workflow signs and attests.
set -eu

[ $# -eq 1 ] || { echo "usage: dist/checksums.sh OUT_DIR" >&2; exit 2; }
cd "$1"
files=$(find . -maxdepth 1 -type f \( -name 'modelpin-*.tar.gz' -o -name install.sh \) \
  | sed 's|^\./||' | LC_ALL=C sort)
[ -n "$files" ] || { echo "checksums.sh: no release files in $1" >&2; exit 1; }
# shellcheck disable=SC2086 # one name per line, none with a blank (they are ours).
sha256sum $files > SHA256SUMS.partial
mv SHA256SUMS.partial SHA256SUMS
cat SHA256SUMS
