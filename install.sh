#!/bin/sh
# Installs a modelpin release binary.
#
#   curl -fsSL https://github.com/modelpin/modelpin/releases/latest/download/install.sh | sh
#   sh install.sh --version v0.1.0 --to /usr/local/bin
#
# Picks the archive built for this platform, checks its SHA-256 against the release's SHA256SUMS
# before anything is unpacked, checks that the binary runs here, and only then puts `modelpin` in
# the target directory (atomically: a rename within that directory). Nothing is installed when any
# step fails. The release's build provenance can be checked as well, with the GitHub CLI:
#   gh attestation verify modelpin-<target>.tar.gz --repo modelpin/modelpin
set -eu

repository="https://github.com/modelpin/modelpin"
version="latest"
to="${MODELPIN_INSTALL_DIR:-}"
from=""

usage() {
  cat <<'EOF'
Usage: install.sh [--version VERSION] [--to DIR] [--from SOURCE]

  --version VERSION  the release to install: a tag such as v0.1.0 (or 0.1.0), or "latest" (default)
  --to DIR           where to put the binary (default: $MODELPIN_INSTALL_DIR, else /usr/local/bin
                     for root, else ~/.local/bin)
  --from SOURCE      where the release's files are: a URL or a local directory holding
                     modelpin-<target>.tar.gz and SHA256SUMS (default: the GitHub release)
EOF
}

die() {
  printf 'install.sh: error: %s\n' "$1" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    --version) [ $# -ge 2 ] || die "--version needs a value"; version="$2"; shift 2 ;;
    --version=*) version="${1#*=}"; shift ;;
    --to) [ $# -ge 2 ] || die "--to needs a value"; to="$2"; shift 2 ;;
    --to=*) to="${1#*=}"; shift ;;
    --from) [ $# -ge 2 ] || die "--from needs a value"; from="$2"; shift 2 ;;
    --from=*) from="${1#*=}"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

case "$version" in
  latest) ;;
  v[0-9]*) ;;
  [0-9]*) version="v$version" ;;
  *) die "--version takes a tag such as v0.1.0 or \"latest\", not \"$version\"" ;;
esac
# A tag is digits, dots, letters and dashes: it becomes part of a URL and a file name.
case "$version" in
  *[!A-Za-z0-9.-]*) die "--version \"$version\" holds a character no release tag has" ;;
esac

if [ -z "$to" ]; then
  if [ "$(id -u)" = 0 ]; then to=/usr/local/bin; else to="${HOME:?HOME is not set}/.local/bin"; fi
fi

os=$(uname -s)
arch=$(uname -m)
case "$arch" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=aarch64 ;;
  *) die "no release binary for the $arch processor: build from source with cargo install --locked --git https://github.com/modelpin/modelpin modelpin" ;;
esac
case "$os" in
  Linux) target="$arch-unknown-linux-musl" ;;
  Darwin) target="$arch-apple-darwin" ;;
  *) die "no release binary for $os: build from source with cargo install --locked --git https://github.com/modelpin/modelpin modelpin" ;;
esac
archive="modelpin-$target.tar.gz"

if [ -z "$from" ]; then
  if [ "$version" = latest ]; then
    from="$repository/releases/latest/download"
  else
    from="$repository/releases/download/$version"
  fi
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/modelpin-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# fetch NAME: the release file NAME into $tmp, from a directory or over HTTPS.
fetch() {
  case "$from" in
    http://* | https://*)
      if command -v curl >/dev/null 2>&1; then
        curl --proto '=https' --tlsv1.2 -fsSL --retry 3 --max-time 300 -o "$tmp/$1" "$from/$1" \
          || die "could not download $from/$1"
      elif command -v wget >/dev/null 2>&1; then
        wget --https-only -q -T 300 -O "$tmp/$1" "$from/$1" || die "could not download $from/$1"
      else
        die "neither curl nor wget is installed"
      fi
      ;;
    file://*) cp "${from#file://}/$1" "$tmp/$1" 2>/dev/null || die "no $1 in ${from#file://}" ;;
    *) cp "$from/$1" "$tmp/$1" 2>/dev/null || die "no $1 in $from" ;;
  esac
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    die "neither sha256sum nor shasum is installed: cannot verify the download"
  fi
}

fetch SHA256SUMS
fetch "$archive"

# SHA256SUMS is sha256sum's own format: "<64 hex digits>  <file name>", one line per file.
expected=$(awk -v name="$archive" '$2 == name || $2 == "*" name { print $1 }' "$tmp/SHA256SUMS")
[ -n "$expected" ] || die "SHA256SUMS of $version lists no $archive"
[ "$(printf '%s\n' "$expected" | wc -l)" -eq 1 ] || die "SHA256SUMS of $version lists $archive more than once"
actual=$(sha256 "$tmp/$archive")
[ "$actual" = "$expected" ] || die "checksum mismatch for $archive: SHA256SUMS says $expected, the download is $actual; nothing was installed"

mkdir "$tmp/unpacked"
tar -xzf "$tmp/$archive" -C "$tmp/unpacked" || die "could not unpack $archive"
binary="$tmp/unpacked/modelpin-$target/modelpin"
[ -f "$binary" ] || die "$archive holds no modelpin-$target/modelpin"
chmod 755 "$binary"
installed=$("$binary" --version 2>/dev/null) || die "the $target binary does not run on this machine"

mkdir -p "$to" || die "cannot create $to"
# Copy beside the destination, then rename: a running modelpin is never overwritten in place.
cp "$binary" "$to/.modelpin.install.$$" || die "cannot write to $to (try --to DIR, or run as a user who can)"
mv -f "$to/.modelpin.install.$$" "$to/modelpin" || { rm -f "$to/.modelpin.install.$$"; die "cannot write $to/modelpin"; }

printf 'installed %s to %s/modelpin (%s, SHA-256 verified)\n' "$installed" "$to" "$archive"
case ":${PATH:-}:" in
  *":$to:"*) ;;
  *)
    # shellcheck disable=SC2016 # $PATH is meant literally: it is the line to paste.
    printf 'note: %s is not on PATH; add it, e.g. export PATH="%s:$PATH"\n' "$to" "$to"
    ;;
esac
