#!/usr/bin/env bash
# Reader tests: profile a real multi-threaded run with the project's own `osprey`, then load
# every output into the tools people open it with (tests/readers/*.test.mjs).
#   tests/readers/run.sh OSPREY [EXAMPLE.c]
# Needs node/npm (the packages in package-lock.json), go (go tool pprof) and /usr/bin/chromium.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
osprey="$(realpath "$1")"
example="$(realpath "${2:-$here/../../examples/mixed.c}")"

run_dir="$(mktemp -d "${TMPDIR:-/tmp}/osprey-readers-XXXXXX")"
trap 'rm -rf "$run_dir"' EXIT
# The report goes to stderr when stdout is not a terminal; keep it for the tests to compare.
(cd "$run_dir" && "$osprey" "$example" --profile -o "$run_dir/run" >"$run_dir/program.out" \
  2>"$run_dir/report.txt")
echo "== profiled $(basename "$example"):"
sed -n '1,/^$/p' "$run_dir/report.txt"

cd "$here"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
OSPREY_RUN_DIR="$run_dir" node --test --test-reporter=spec
