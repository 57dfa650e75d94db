#!/bin/bash
# bench/field/beside-perf.sh BUILD STEM -- COMMAND [ARGS...] — the top self times of one run
# under `perf record -e cpu-clock -F 997 -g` beside those of Osprey's profile at STEM (a
# round6.sh run of the same command): perf's five first rows of `perf report --no-children
# --sort dso` and `--sort sym` beside the five first of `osprey report STEM.raw.json --top 5`
# (and `bench/field/objects.py`, its shares by object). With DWARF=1 perf
# unwinds by `--call-graph dwarf` and the share of its samples whose stack reaches main or a
# thread's start is printed as well. Root only (perf's kernel frames).
set -u
build=$1
stem=$2
shift 3
data=$(mktemp /tmp/osprey-beside-perf.XXXXXX)
graph=(-g)
[ "${DWARF:-0}" = 1 ] && graph=(--call-graph dwarf)
perf record -q -e cpu-clock -F 997 "${graph[@]}" -o "$data" -- "$@" >/dev/null 2>&1
echo "perf:"
for sort in dso sym; do
  perf report -i "$data" --stdio --no-children -g none --sort "$sort" 2>/dev/null | grep -v '^#' |
    grep '%' | head -5 | sed 's/^ */  /'
done
if [ "${DWARF:-0}" = 1 ]; then
  perf script -i "$data" -F comm,tid,ip,sym 2>/dev/null | awk '
    /^[^ \t]/ { if (n) { total++; whole += reached }; n = 1; reached = 0; next }
    /(main|_start|start_thread|clone3?|runtime\.goexit|runtime\.mstart|runtime\.rt0_go)/ { reached = 1 }
    END { if (n) { total++; whole += reached }; printf "  stacks reaching main or a start: %.1f%% of %d\n", 100 * whole / total, total }'
fi
rm -f "$data"
echo "osprey:"
"$build/tools/osprey" report "$stem.raw.json" --top 5 --format folded -o "$stem.top" 2>&1 |
  grep -A5 'SELF%' | tail -5
python3 "$(dirname "$0")/objects.py" "$stem.raw.json" | sed 's/^[^:]*: /  /'
