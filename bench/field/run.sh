#!/bin/bash
# bench/field/run.sh NAME [BUILD] -- COMMAND [ARGS...]
#
# A program someone brings, run plain and then under `osprey COMMAND --profile` as the README
# teaches; prints one line: both exit statuses, whether stdout is the same byte for byte, both
# wall times and both CPU times (user + system of every process). Outputs in $FIELD_OUT (default /tmp/osprey-field): NAME.plain.out/.err,
# NAME.prof.out/.err (the report) and every output at the stem NAME. For another user, run it
# under setpriv with FIELD_OUT a directory that user may write.
set -u
name=$1
shift
build=build
if [ "${1:-}" != "--" ]; then
  build=$1
  shift
fi
[ "${1:-}" = "--" ] && shift
osprey=$(cd "$(dirname "$0")/../.." && pwd)/$build/tools/osprey
[ "${build#/}" != "$build" ] && osprey=$build/tools/osprey
out=${FIELD_OUT:-/tmp/osprey-field}
mkdir -p "$out"
now() { date +%s.%N; }
TIMEFORMAT='%3U %3S' # user and system CPU of the command and its children
cpu() { awk '{ print $1 + $2 }' "$1"; }
start=$(now)
{ time "$@" >"$out/$name.plain.out" 2>"$out/$name.plain.err"; } 2>"$out/$name.plain.time"
plain_status=$?
plain_s=$(echo "$(now) - $start" | bc)
start=$(now)
{ time NO_COLOR=1 "$osprey" "$1" --profile -o "$out/$name" -- "${@:2}" >"$out/$name.prof.out" \
  2>"$out/$name.prof.err"; } 2>"$out/$name.prof.time"
prof_status=$?
prof_s=$(echo "$(now) - $start" | bc)
same=same
cmp -s "$out/$name.plain.out" "$out/$name.prof.out" || same=DIFFERENT
printf '%s: exit %d / %d, stdout %s, wall %.2f s / %.2f s, CPU %.2f s / %.2f s (plain / osprey, the collector and the report included)\n' \
  "$name" "$plain_status" "$prof_status" "$same" "$plain_s" "$prof_s" \
  "$(cpu "$out/$name.plain.time")" "$(cpu "$out/$name.prof.time")"
