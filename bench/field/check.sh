#!/bin/bash
# bench/field/check.sh BUILD STEM — every output a run left at STEM opens: `osprey report`
# on the raw file, each JSON output in node's JSON.parse, the pprof file in `go tool pprof
# -top`; then the on-CPU samples by the outermost frame of their stack (from STEM.folded):
# `_start`, `clone3`, … are stacks that reached their root. One line per check.
set -u
build=$1
stem=$2
osprey=$build/tools/osprey
ok() { printf '  %-22s %s\n' "$1" "$2"; }
if "$osprey" report "$stem.raw.json" --format folded -o "$stem.again" >/dev/null 2>"$stem.again.err"; then
  ok report "opens ($(grep -c . "$stem.again.err") lines on stderr)"
else
  ok report "FAILED: $(head -1 "$stem.again.err")"
fi
for f in "$stem".speedscope.json "$stem".cpuprofile "$stem".trace.json "$stem".profile.json "$stem".raw.json; do
  [ -e "$f" ] || { ok "${f#"$stem"}" MISSING; continue; }
  if node -e 'JSON.parse(require("fs").readFileSync(process.argv[1]))' "$f" 2>/dev/null; then
    ok "${f#"$stem"}" parses
  else
    ok "${f#"$stem"}" "DOES NOT PARSE"
  fi
done
if [ -e "$stem.pb.gz" ]; then
  if go tool pprof -top "$stem.pb.gz" >"$stem.pprof.txt" 2>&1; then
    ok pprof "$(grep -m1 '^Showing nodes' "$stem.pprof.txt" || head -1 "$stem.pprof.txt")"
  else
    ok pprof "FAILED: $(head -1 "$stem.pprof.txt")"
  fi
fi
# Roots: the first frame after the process and thread fields (NAME-PID) is the outermost one.
if [ -s "$stem.again.folded" ]; then
  awk '{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, f, ";")
         i = 1; while (i < k && f[i] ~ /-[0-9]+$/) i++
         by[f[i]] += n; total += n }
       END { for (r in by) printf "%d\t%s\n", by[r], r; printf "%d\t~TOTAL\n", total }' "$stem.again.folded" |
    sort -t "$(printf '\t')" -k1,1rn -k2 | awk -F "\t" '$2 == "~TOTAL" { total = $1; next } { n[NR] = $1; r[NR] = $2 }
      END { for (i = 1; i <= 6; i++) if (i in n) printf "%s %.1f%%, ", r[i], 100 * n[i] / total; print "" }' |
    sed 's/^/  roots                  /'
fi
