#!/usr/bin/env bash
# The GitHub Action's steps (action.yml at the repository root calls this, one mode per step):
#
#   action.sh locate   where the binary for MODELPIN_VERSION goes; whether it may be cached
#   action.sh install  install.sh into that directory (checksum verified)
#   action.sh run      modelpin MODELPIN_COMMAND MODELPIN_ARGS, its output shown and kept
#
# Everything comes in through environment variables that action.yml sets from its inputs (never
# pasted into the script, so no input can become shell code), and goes out through
# $GITHUB_OUTPUT. The same script runs on any machine with those variables set.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
output=${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set: this runs as a step of the modelpin action}
version=${MODELPIN_VERSION:-latest}

fail() {
  echo "::error title=modelpin action::$1"
  exit 2
}

case "$version" in
  latest) ;;
  v[0-9]*) ;;
  [0-9]*) version="v$version" ;;
  *) fail "input 'version' takes a release tag such as v0.1.0, or latest; got '$version'" ;;
esac
case "$version" in
  *[!A-Za-z0-9.-]*) fail "input 'version' holds a character no release tag has: '$version'" ;;
esac

case "$(uname -s)" in
  Linux | Darwin) ;;
  *) fail "modelpin has release binaries for Linux and macOS runners, not $(uname -s)" ;;
esac

# A pinned version is kept in the runner's tool cache and in actions/cache; "latest" is fetched
# afresh each run (a cache keyed on it would keep an old release forever).
if [ "$version" = latest ]; then
  dir="${RUNNER_TEMP:?RUNNER_TEMP is not set}/modelpin-latest"
  cacheable=false
else
  dir="${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:?RUNNER_TEMP is not set}}/modelpin/$version/$(uname -m)"
  cacheable=true
fi

case "${1:-}" in
  locate)
    {
      echo "dir=$dir"
      echo "version=$version"
      echo "cacheable=$cacheable"
    } >> "$output"
    ;;

  install)
    from=()
    if [ -n "${MODELPIN_RELEASES:-}" ]; then
      from=(--from "$MODELPIN_RELEASES")
    fi
    # `${a[@]+…}`: an empty array is no unbound variable under `set -u` in bash before 4.4.
    "$here/../install.sh" --version "$version" --to "$dir" ${from[@]+"${from[@]}"}
    ;;

  run)
    command=${MODELPIN_COMMAND:-check}
    case "$command" in
      "" | -* | *[!a-z-]*) fail "input 'command' is one modelpin command (check, scan, lock, …), not '$command'" ;;
    esac
    binary="$dir/modelpin"
    [ -x "$binary" ] || fail "modelpin $version is not installed in $dir"
    # `args` is split at blanks and newlines, with no quoting and no globbing: one argument per
    # word, exactly as written.
    set -f
    # shellcheck disable=SC2206 # the split is the point; globbing is off.
    args=(${MODELPIN_ARGS:-})
    set +f
    report="${RUNNER_TEMP:?RUNNER_TEMP is not set}/modelpin-$command.out"
    # The output goes to the log as it comes (so `--format github` annotations take effect) and
    # to the report file the step's `report` output names.
    code=0
    saved=0
    "$binary" "$command" ${args[@]+"${args[@]}"} | tee "$report" \
      || { statuses=("${PIPESTATUS[@]}"); code=${statuses[0]}; saved=${statuses[1]}; }
    # A report that could not be written is no pass, whatever modelpin said.
    if [ "$saved" != 0 ]; then
      fail "could not write the report to $report"
    fi
    {
      echo "exit-code=$code"
      echo "report=$report"
    } >> "$output"
    if [ "$code" = 3 ] && [ "${MODELPIN_ALLOW_INCONCLUSIVE:-false}" = true ]; then
      echo "::warning title=modelpin::inconclusive (exit 3): something could not be measured; the report says what and why"
      exit 0
    fi
    exit "$code"
    ;;

  *)
    echo "usage: action.sh locate|install|run" >&2
    exit 2
    ;;
esac
