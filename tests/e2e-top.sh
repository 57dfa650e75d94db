#!/usr/bin/env bash
# `osprey top PID` in a real terminal (tmux, as e2e-terminal.sh drives it): a program built
# without frame pointers burns CPU in burn_cycles (tests/top/burn.c); the live view must show
# that function above 50% of the on-CPU time, refresh (the sample count changes between two
# screens), quit on `q` with status 0 and give the shell back its screen and its echo; the
# program runs on with the same threads and descriptors as before. A pid that does not exist:
# one line and a non-zero status; the process ending ends top with one line. Every way out
# (Ctrl-\, SIGTERM, SIGHUP, SIGINT, a crash's SIGSEGV, Ctrl-Z and then fg) gives the terminal
# back: echo and icanon on, the alternate screen off, the cursor shown. The keys: c sorts by
# TOTAL%, s by SELF% again, t shows the threads (the main thread, burn_cycles its hottest), p
# pauses (the screen stays) and goes on, ? shows the keys and any key goes back.
# Without tmux it is skipped (exit 77), except under CI, where it must run; where perf events
# are refused (perf_event_paranoid 3), skipped.
# Usage: e2e-top.sh OSPREY SOURCE_DIR
set -uo pipefail
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"

osprey=$(realpath "${1:?usage: e2e-top.sh OSPREY SOURCE_DIR}")
src=$(realpath "${2:?usage: e2e-top.sh OSPREY SOURCE_DIR}")
require_tmux
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$paranoid" -gt 2 ] && [ "$(id -u)" -ne 0 ]; then
  skip "perf events are not allowed here (perf_event_paranoid $paranoid)"
fi

socket="osprey-top-$$"
burn_pid=
tmux_() { tmux -L "$socket" -f /dev/null "$@"; }
cleanup() {
  tmux_ kill-server 2>/dev/null
  [ -n "$burn_pid" ] && kill "$burn_pid" 2>/dev/null
}
scratch_dir top cleanup
cd "$work" || exit 1

gcc -O2 -g -fomit-frame-pointer "$src/burn.c" -o "$work/burn" 2>"$work/build" ||
  { fail "build failed: $(cat "$work/build")"; finish ""; }
"$work/burn" >"$work/burn.out" 2>&1 &
burn_pid=$!
for _ in $(seq 100); do grep -q ready "$work/burn.out" && break; sleep 0.05; done
# what of the process a profiler could leave behind
snapshot() {
  {
    ls "/proc/$burn_pid/task"
    for fd in /proc/"$burn_pid"/fd/*; do echo "$fd $(readlink "$fd")"; done
  } >"$1"
}
snapshot "$work/before"

# --- a pid that does not exist: one line, a non-zero status ------------------------------------
missing=999999999
"$osprey" top "$missing" >"$work/missing.out" 2>"$work/missing.err"
status=$?
[ "$status" -ne 0 ] || fail "osprey top of a pid that does not exist exited 0"
expect_one_line "$work/missing.err" "^osprey: .*no process $missing" "osprey top of a missing pid"
[ ! -s "$work/missing.out" ] || fail "osprey top of a missing pid wrote to stdout"

# --- the live view in a terminal ----------------------------------------------------------------
tmux_ new-session -d -s top -x 110 -y 30 \
  "env -u NO_COLOR TERM=xterm-256color PS1='term\$ ' bash --norc --noprofile -i" ||
  { fail "cannot start tmux"; finish ""; }
plain() { tmux_ capture-pane -t top -p; }
wait_for '^term\$' 10 || fail "the shell did not start"
tmux_ send-keys -t top "'$osprey' top $burn_pid; echo \"end-of-top status=\$?\"" Enter

hot='^ *([5-9][0-9]|100)\.[0-9]% +[0-9.]+% +burn_cycles +burn\.c'
wait_for "$hot" 30 || { plain >"$work/screen.txt"; fail "burn_cycles above 50% never shown:
$(cat "$work/screen.txt")"; }
plain >"$work/first.txt"
grep -q "pid $burn_pid (burn)" "$work/first.txt" || fail "no header: $(cat "$work/first.txt")"
samples() { grep -Eo '[0-9]+ samples' "$1" | head -n 1 | cut -d' ' -f1; }
first=$(samples "$work/first.txt")
[ -n "$first" ] || fail "no sample count in the header: $(cat "$work/first.txt")"
refreshed=
for _ in $(seq 50); do
  sleep 0.2
  plain >"$work/second.txt"
  second=$(samples "$work/second.txt")
  if [ -n "$second" ] && [ "$second" != "$first" ]; then refreshed=1; break; fi
done
[ -n "$refreshed" ] || fail "the screen did not refresh (samples stayed $first)"
# colours as the report's: the hot row red and bold (tmux gives them back as two escapes)
tmux_ capture-pane -t top -p -e | grep -Eq $'\033\\[1m\033\\[31m.*burn_cycles|\033\\[1;31m.*burn_cycles' ||
  fail "the hot row is not in the report's colour"

tmux_ send-keys -t top q
wait_for '^end-of-top status=[0-9]+' 20 || fail "osprey top did not quit on q: $(plain)"
plain >"$work/after.txt"
grep -q '^end-of-top status=0$' "$work/after.txt" || fail "osprey top did not exit 0: $(cat "$work/after.txt")"
# the shell's screen is back (the alternate one is gone) and the terminal echoes again
if grep -q 'SELF%' "$work/after.txt"; then fail "the view was left on the screen: $(cat "$work/after.txt")"; fi
tmux_ send-keys -t top "echo typed-after-top" Enter
wait_for '^term\$ echo typed-after-top$' 10 || fail "the terminal does not echo after quitting: $(plain)"
wait_for '^typed-after-top$' 10 || fail "the shell does not run commands after quitting: $(plain)"

# --- the program runs on, nothing of ours in it -------------------------------------------------
kill -0 "$burn_pid" 2>/dev/null || fail "the program did not survive osprey top"
sleep 0.2
snapshot "$work/after"
diff "$work/before" "$work/after" >"$work/diff" ||
  fail "the program's threads or descriptors changed: $(cat "$work/diff")"

# --- the terminal given back on every way out ---------------------------------------------------
# After each: `stty -a` shows echo and icanon, the alternate screen is off and the cursor shown
# (tmux's own view of the pane), and the shell runs what is typed.
start_top() {
  tmux_ send-keys -t top "clear" Enter
  sleep 0.3
  tmux_ send-keys -t top "'$osprey' top $burn_pid; echo \"end-of-$1 status=\$?\"" Enter
  wait_for "$hot" 30 || fail "$1: the view never came: $(plain)"
}
# the osprey process the pane's shell runs
top_process() { pgrep -P "$(tmux_ display -p -t top '#{pane_pid}')" -x osprey; }
given_back() {
  local name=$1 modes
  if [ "$(tmux_ display -p -t top '#{alternate_on} #{cursor_flag}')" != "0 1" ]; then
    fail "$name: the alternate screen or the hidden cursor was left (alternate_on cursor_flag:" \
      "$(tmux_ display -p -t top '#{alternate_on} #{cursor_flag}'))"
  fi
  tmux_ send-keys -t top "stty -a >'$work/stty.$name'; echo stty-done-$name" Enter
  wait_for "^stty-done-$name\$" 10 || { fail "$name: the shell does not run commands: $(plain)"; return; }
  modes=$(cat "$work/stty.$name")
  grep -Eq '(^|[ ;])echo([ ;]|$)' <<<"$modes" || fail "$name: echo is off after it: $modes"
  grep -Eq '(^|[ ;])icanon([ ;]|$)' <<<"$modes" || fail "$name: icanon is off after it: $modes"
  wait_for "^term\\\$ stty -a >.*; echo stty-done-$name\$" 5 || fail "$name: what is typed is not echoed: $(plain)"
}
for way in QUIT TERM HUP INT SEGV; do
  start_top "$way"
  if [ "$way" = QUIT ]; then
    tmux_ send-keys -t top "C-\\" # Ctrl-\
  else
    pid=$(top_process)
    [ -n "$pid" ] || fail "$way: no osprey process under the shell"
    kill -s "$way" "$pid"
  fi
  wait_for "^end-of-$way status=[0-9]+" 20 || { fail "$way: osprey top did not end: $(plain)"; continue; }
  given_back "$way"
done
# Ctrl-Z: the terminal given back while stopped; `fg` takes it again and redraws; q quits.
start_top TSTP
tmux_ send-keys -t top 'C-z'
wait_for 'Stopped' 20 || fail "TSTP: osprey top did not stop: $(plain)"
given_back TSTP
# (the shell ran the rest of the line when the job stopped: fg gets a marker of its own)
tmux_ send-keys -t top "clear; fg; echo \"end-of-fg status=\$?\"" Enter
wait_for "$hot" 30 || fail "TSTP: no view after fg: $(plain)"
[ "$(tmux_ display -p -t top '#{alternate_on} #{cursor_flag}')" = "1 0" ] ||
  fail "TSTP: after fg the view is not on the alternate screen with the cursor hidden"
tmux_ send-keys -t top q
wait_for '^end-of-fg status=0$' 20 || fail "TSTP: q after fg did not quit with status 0: $(plain)"
given_back CONT

# --- the keys: sort by total, the threads, pause, help ---------------------------------------------
start_top keys
header() { plain | head -n 1; }
tmux_ send-keys -t top c
wait_for '^osprey top .* by TOTAL%' 10 || fail "c: the header does not say by TOTAL%: $(plain)"
plain >"$work/total.txt"
# TOTAL% in the table's order never goes up
awk '/^ *[0-9.]+% +[0-9.]+%/ { t = $2 + 0; if (seen && t > last + 0.05) bad = 1; last = t; seen = 1 }
     END { exit bad }' "$work/total.txt" || fail "c: rows not by TOTAL%: $(cat "$work/total.txt")"
tmux_ send-keys -t top s
# The rows look alike in either order: wait for the header to change, not for a row.
for _ in $(seq 100); do header | grep -q 'by TOTAL%' || break; sleep 0.1; done
header | grep -q 'by TOTAL%' && fail "s: the header still says by TOTAL%: $(header)"
wait_for '^ *[0-9.]+% +[0-9.]+% +burn_cycles' 10 || fail "s: not back to SELF%: $(plain)"
tmux_ send-keys -t top t
wait_for "^ *[0-9]+% +[0-9.]+% +$burn_pid +main +burn_cycles" 10 ||
  fail "t: no row for the thread $burn_pid with its hottest function: $(plain)"
header | grep -q '  threads' || fail "t: the header does not say threads: $(header)"
tmux_ send-keys -t top t
wait_for '^ *SELF% +TOTAL% +FUNCTION' 10 || fail "t again: not back to the functions: $(plain)"
tmux_ send-keys -t top p
wait_for '^osprey top .*PAUSED' 10 || fail "p: the header does not say PAUSED: $(plain)"
paused=$(plain | grep -Eo '[0-9]+ samples' | head -n 1)
sleep 2.5 # two refreshes and more: a paused screen stays
[ "$(plain | grep -Eo '[0-9]+ samples' | head -n 1)" = "$paused" ] ||
  fail "p: the screen changed while paused ($paused, then $(plain | grep -Eo '[0-9]+ samples' | head -n 1))"
tmux_ send-keys -t top p
wait_for_change() {
  for _ in $(seq 50); do
    sleep 0.2
    now=$(plain | grep -Eo '[0-9]+ samples' | head -n 1)
    [ -n "$now" ] && [ "$now" != "$paused" ] && return 0
  done
  return 1
}
wait_for_change || fail "p again: the screen did not go on: $(plain)"
header | grep -q PAUSED && fail "p again: still PAUSED: $(header)"
tmux_ send-keys -t top '?'
wait_for '^Keys:' 10 || fail "?: no help: $(plain)"
wait_for 'pause' 2 || fail "?: the help does not name pause: $(plain)"
tmux_ send-keys -t top x
wait_for '^ *SELF% +TOTAL% +FUNCTION' 10 || fail "a key after ?: not back to the view: $(plain)"
tmux_ send-keys -t top q
wait_for '^end-of-keys status=0$' 20 || fail "keys: q did not quit with status 0: $(plain)"
given_back keys

# --- the process ending ends top, with one line -------------------------------------------------
"$osprey" top "$burn_pid" >"$work/ending.out" 2>"$work/ending.err" &
top_pid=$!
for _ in $(seq 100); do grep -q 'burn_cycles' "$work/ending.out" && break; sleep 0.1; done
kill "$burn_pid"
wait "$burn_pid" 2>/dev/null
burn_pid=
wait "$top_pid"
expect_status 0 $? "osprey top of a process that ended"
expect_one_line "$work/ending.err" "^osprey: process [0-9]+ \(burn\) was killed by signal 15" \
  "osprey top of a process that ended"
grep -q burn_cycles "$work/ending.out" || fail "no snapshot of the process off a terminal"
if grep -q $'\033' "$work/ending.out"; then fail "escapes in the output off a terminal"; fi

finish "osprey top showed burn_cycles, refreshed, sorted, showed threads, paused, helped, quit on q, gave the terminal back on every way out and left the program as it was"
