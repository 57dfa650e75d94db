#!/usr/bin/env bash
# End-to-end: a profile whose samples ospreyd spilled to disk as they came (a long run's way,
# forced here at every sample with OSPREYD_SPILL_SAMPLES=1) is the profile it keeps in memory:
#   - `osprey HOTSPOT --profile` with every sample spilled: the program's output and exit
#     status are its own, the report names checksum_block first, the raw file says every row
#     but the last went through the disk (collector.spilled_samples), the exporters count the
#     raw file's periods, and the output directory holds what an unspilled run's holds (the
#     spill file has no name);
#   - `osprey report` on that raw file prints the report the run printed;
#   - `osprey attach` (where perf events are allowed) spills the same way.
# That spilled and unspilled collectors write the same rows from the same records, byte for
# byte, is test-daemon's (spilled_samples_write_the_same_raw_file,
# daemon_spills_samples_and_writes_the_same_profile).
# Usage: e2e-longrun.sh OSPREY HOTSPOT_EXE
set -uo pipefail

osprey=${1:?usage: e2e-longrun.sh OSPREY HOTSPOT_EXE}
hotspot=${2:?usage: e2e-longrun.sh OSPREY HOTSPOT_EXE}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir longrun
blocks=4000

# rows_and_spilled RAW: "ROWS PERIODS SPILLED" of a raw file.
rows_and_spilled() {
  python3 - "$1" <<'PY'
import json, sys
raw = json.load(open(sys.argv[1]))
rows = raw["samples"]
periods = sum(r[4] if len(r) > 4 else 1 for r in rows)
print(len(rows), periods, raw.get("collector", {}).get("spilled_samples", 0))
PY
}

# exported_periods STEM: the periods the exporters counted (the folded outputs, on and off CPU).
exported_periods() {
  cat "$1.folded" "$1.offcpu.folded" 2>/dev/null | awk '{n += $NF} END {print n + 0}'
}

# first_row FILE: the report's first top-10 row's function.
first_row() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -A1 -E "SELF%.*FUNCTION" | sed -n 2p
}

# report_part FILE...: the report's summary, threads and functions, colours taken out.
report_part() {
  sed 's/\x1b\[[0-9;]*m//g' "$@" | awk '/^osprey: [0-9]/ {on = 1} on {print} /^sampling:/ {on = 0}'
}

expected=$("$hotspot" "$blocks")
for mode in kept spilled; do
  mkdir -p "$work/$mode"
  if [ "$mode" = spilled ]; then spill=1; else spill=; fi
  OSPREYD_SPILL_SAMPLES=$spill "$osprey" "$hotspot" --profile -o "$work/$mode/hotspot" \
    -- "$blocks" >"$work/$mode.stdout" 2>"$work/$mode.stderr"
  status=$?
  expect_status 0 "$status" "osprey hotspot --profile ($mode)"
  [ "$(cat "$work/$mode.stdout")" = "$expected" ] ||
    fail "$mode: the program's output changed: $(cat "$work/$mode.stdout")"
  case "$(first_row "$work/$mode.stderr")" in
    *" checksum_block "*) ;;
    *) fail "$mode: the report's first row is not checksum_block"; cat "$work/$mode.stderr" >&2 ;;
  esac
done

read -r rows periods spilled < <(rows_and_spilled "$work/spilled/hotspot.raw.json")
echo "spilled run: $rows rows, $periods periods, $spilled rows spilled"
[ "$rows" -gt 2 ] || fail "spilled: only $rows sample rows"
if [ "$spilled" -lt $((rows - 1)) ] || [ "$spilled" -gt "$rows" ]; then
  fail "spilled: $spilled of $rows rows went through the spill file, expected all but the last"
fi
read -r _ _ kept_spilled < <(rows_and_spilled "$work/kept/hotspot.raw.json")
[ "$kept_spilled" -eq 0 ] || fail "kept: $kept_spilled rows spilled with the default batch"
exported=$(exported_periods "$work/spilled/hotspot")
[ "$exported" -eq "$periods" ] ||
  fail "spilled: the exporters counted $exported periods, the raw file holds $periods"
[ "$(cd "$work/kept" && find . -mindepth 1 | sort)" = "$(cd "$work/spilled" && find . -mindepth 1 | sort)" ] ||
  fail "the spilled run's directory holds other files: $(ls -A "$work/spilled")"

# The report of the raw file, again: the run's own report, row for row.
"$osprey" report "$work/spilled/hotspot.raw.json" -o "$work/again" >"$work/report.stdout" \
  2>"$work/report.stderr"
expect_status 0 $? "osprey report on the spilled raw file"
diff <(report_part "$work/spilled.stderr") \
  <(report_part "$work/report.stdout" "$work/report.stderr") >"$work/report.diff" ||
  { fail "osprey report on the spilled raw file differs from the run's report"; cat "$work/report.diff" >&2; }
[ "$(report_part "$work/spilled.stderr" | grep -c checksum_block)" -ge 1 ] ||
  fail "the run's report holds no checksum_block row"

# Attached: the collector spills the same way.
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$paranoid" -le 2 ] || [ "$(id -u)" -eq 0 ]; then
  "$hotspot" 200000 >/dev/null &
  target=$!
  pids+=("$target")
  sleep 0.3
  OSPREYD_SPILL_SAMPLES=2 "$osprey" attach "$target" --duration 2 -o "$work/attach/hotspot" \
    >"$work/attach.stdout" 2>"$work/attach.stderr"
  expect_status 0 $? "osprey attach ($(tail -1 "$work/attach.stderr"))"
  kill "$target" 2>/dev/null
  wait "$target" 2>/dev/null
  read -r rows periods spilled < <(rows_and_spilled "$work/attach/hotspot.raw.json")
  echo "attached: $rows rows, $periods periods, $spilled rows spilled"
  if [ "$rows" -le 2 ] || [ "$spilled" -lt $((rows - 2)) ] || [ "$spilled" -gt "$rows" ]; then
    fail "attached: $spilled of $rows rows went through the spill file, expected all but the last two"
  fi
  exported=$(exported_periods "$work/attach/hotspot")
  [ "$exported" -eq "$periods" ] ||
    fail "attached: the exporters counted $exported periods, the raw file holds $periods"
else
  echo "perf events are not allowed here (perf_event_paranoid $paranoid): attach not checked"
fi

finish "spilled samples give the same profile (run and attach)"
