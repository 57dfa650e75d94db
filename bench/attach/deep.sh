#!/usr/bin/env bash
# bench/attach/deep.sh BUILD_DIR [BEFORE_BUILD_DIR] [ROUNDS]: a stack 300 deep attached from
# outside (tests/attach/deep.c, frame pointers: main -> deep_descend x 300 -> deep_spin), by
# perf events and by the ptrace sampler (perf_event_open refused by tests/refuse), `osprey
# attach --duration 2` each, ROUNDS rounds (default 3), each round every build and sampler in
# turn (interleaved). Per build and sampler, summed over the rounds: the on-CPU samples in
# deep_spin, the share reaching main past one "[… N frames]" frame, the share whose walk says
# it reached the outermost frame (stack_ends), and the collector's CPU per second of the window
# (the report's first line, each round's). Needs perf events allowed (root, or
# perf_event_paranoid <= 2) and ptrace of our own child.
set -uo pipefail
after=$(cd "${1:?usage: deep.sh BUILD_DIR [BEFORE_BUILD_DIR] [ROUNDS]}" && pwd)
before=${2:+$(cd "$2" && pwd)}
rounds=${3:-3}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-attach-deep.XXXXXX")
trap 'rm -rf "$work"' EXIT
export PYTHONPATH=$src/tests PYTHONDONTWRITEBYTECODE=1
gcc -O2 -g -fno-omit-frame-pointer "$src/tests/attach/deep.c" -o "$work/deep" || exit 1

builds=(after)
[ -n "$before" ] && builds=(before after)
for round in $(seq "$rounds"); do
  for b in "${builds[@]}"; do
    dir=$after
    [ "$b" = before ] && dir=$before
    for sampler in perf ptrace; do
      "$work/deep" 6 >"$work/out" 2>&1 &
      pid=$!
      for _ in $(seq 100); do grep -q ready "$work/out" && break; sleep 0.05; done
      wrap=()
      [ "$sampler" = ptrace ] && wrap=("$dir/tests/refuse" perf_event_open)
      "${wrap[@]}" "$dir/tools/osprey" attach "$pid" --duration 2 \
        -o "$work/$b-$sampler-$round" >"$work/$b-$sampler-$round.report" 2>&1
      wait "$pid"
    done
  done
done

for b in "${builds[@]}"; do
  for sampler in perf ptrace; do
    python3 - "$work" "$b" "$sampler" "$rounds" <<'PY'
import re, sys
from checks import load_raw, on_cpu, periods, rooted_past_marker, stack_whole
work, build, sampler, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
total = rooted = cpu = outer = 0
collector = []
for r in range(1, rounds + 1):
    stem = "%s/%s-%s-%d" % (work, build, sampler, r)
    t, k = rooted_past_marker(stem + ".folded", "deep_spin", 150, 200)
    total, rooted = total + t, rooted + k
    raw = load_raw(stem + ".raw.json")
    cpu += periods(raw, on_cpu)
    outer += periods(raw, lambda s: on_cpu(s) and stack_whole(raw, s[2]))
    m = re.search(r"collector (\d+) ms CPU/s", open(stem + ".report").read())
    collector.append(m.group(1) if m else "?")
print("%-6s %-6s %5d samples in deep_spin, %5.1f%% reach main past one marker; "
      "%5.1f%% of %d on-CPU periods walked to the outermost frame; collector ms CPU/s: %s"
      % (build, sampler, total, 100 * rooted / max(total, 1), 100 * outer / max(cpu, 1), cpu,
         " ".join(collector)))
PY
  done
done
