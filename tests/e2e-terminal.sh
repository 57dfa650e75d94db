#!/usr/bin/env bash
# `osprey` in a real terminal, as a person sees it: a tmux session of a fixed size runs an
# interactive shell, keys are typed into it (send-keys) and the screen is read back with its
# colours (capture-pane -e). Four scenes: a profile of the bundled example (the program's
# output, then the report in colour), a server-like program stopped with Ctrl-C (the profile of
# what ran is still reported), a mistyped command (the suggestion) and --help.
# Usage: e2e-terminal.sh path/to/osprey path/to/examples/hotspot.c
# Without tmux it is skipped (exit 77), except under CI, where tmux is installed and it must run.
set -uo pipefail
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"

osprey=$(realpath "${1:?usage: e2e-terminal.sh OSPREY HOTSPOT_C}")
hotspot_c=$(realpath "${2:?usage: e2e-terminal.sh OSPREY HOTSPOT_C}")
require_tmux

socket="osprey-test-$$"
tmux_() { tmux -L "$socket" -f /dev/null "$@"; }
cleanup() { tmux_ kill-server 2>/dev/null; }
scratch_dir terminal cleanup
cd "$work" || exit 1

# A plain interactive shell, 120x50, colour terminal, NO_COLOR unset, a prompt of its own.
tmux_ new-session -d -s osprey -x 120 -y 50 \
  "env -u NO_COLOR TERM=xterm-256color PS1='term\$ ' bash --norc --noprofile -i" ||
  { echo "FAIL: cannot start tmux" >&2; exit 1; }
tmux_ set-option -t osprey history-limit 5000 >/dev/null

# screen: what the pane shows now, its scrollback included, with colour escapes.
screen() { tmux_ capture-pane -t osprey -p -e -S -; }
plain() { tmux_ capture-pane -t osprey -p -S -; }

# run_scene NAME COMMAND [SECONDS]: clear the pane, type COMMAND and Enter, then wait until it
# finished (the shell echoes a marker with its exit status); the screen goes to NAME.screen.
run_scene() {
  local name=$1 command=$2 limit=${3:-120}
  start_scene "$name" "$command"
  end_scene "$name" "$limit"
}
# start_scene NAME COMMAND: a clear screen and history, then COMMAND typed and Enter.
start_scene() {
  tmux_ send-keys -t osprey "clear" Enter
  wait_for_prompt_alone
  tmux_ clear-history -t osprey
  tmux_ send-keys -t osprey "$2; echo \"end-of-$1 status=\$?\"" Enter
}
# end_scene NAME SECONDS: wait for the scene's marker; the screen into NAME.screen (colours)
# and NAME.txt (text), the command's exit status into $status.
end_scene() {
  wait_for "^end-of-$1 status=[0-9]+" "$2" || fail "$1: did not finish in $2 s"
  screen >"$1.screen"
  plain >"$1.txt"
  status=$(grep -Eo "^end-of-$1 status=[0-9]+" "$1.txt" | tail -n 1 | cut -d= -f2)
}
# After `clear`: the pane shows the prompt alone.
wait_for_prompt_alone() {
  local deadline=$((SECONDS + 10))
  while [ "$SECONDS" -lt "$deadline" ]; do
    [ "$(tmux_ capture-pane -t osprey -p | grep -c .)" -le 1 ] && return 0
    sleep 0.1
  done
}


# --- a profile of the bundled example ---------------------------------------------------------
run_scene profile "'$osprey' '$hotspot_c' --profile -o hot -- 3000"
expect_status 0 "${status:-1}" "profile of the example"
grep -q "^checksum of 3000 blocks: " profile.txt ||
  fail "profile: the program's own output is not on the screen"
grep -Eq "^osprey: .* wall, .* CPU, [0-9]+ samples \([0-9]+ on-CPU\), 997 Hz, 2 threads" profile.txt ||
  fail "profile: no report header on the screen: $(cat profile.txt)"
grep -q "checksum_block" profile.txt || fail "profile: checksum_block is not in the table"
# The hot row in red and bold: the escapes reach the terminal (tmux writes them back as SGR).
esc=$(printf '\033')
grep "checksum_block" profile.screen | grep -Eq "${esc}\[(1;31|1m${esc}\[31|31;1)m" ||
  fail "profile: the hot row is not red and bold: $(grep checksum_block profile.screen | cat -v)"
grep -q "^  hot.raw.json" profile.txt || fail "profile: written: does not list hot.raw.json"
# The program's output comes before the report.
program_line=$(grep -n "^checksum of" profile.txt | head -n 1 | cut -d: -f1)
report_line=$(grep -n "^osprey: .* wall" profile.txt | head -n 1 | cut -d: -f1)
if [ -z "$program_line" ] || [ -z "$report_line" ] || [ "$program_line" -ge "$report_line" ]; then
  fail "profile: the report is not after the program's output"
fi

# --- a server stopped with Ctrl-C ---------------------------------------------------------------
cat >server.c <<'EOF'
#include <stdio.h>
#include <time.h>
__attribute__((noinline)) static unsigned long serve_request(unsigned long n)
{
    volatile unsigned long x = n;
    for (unsigned long i = 0; i < 2000000UL; i++)
        x = x * 2654435761UL + i;
    return x;
}
int main(void)
{
    printf("listening on :8080\n");
    fflush(stdout);
    unsigned long total = 0;
    for (unsigned long n = 0;; n++) {
        total += serve_request(n);
        struct timespec pause = {0, 2000000};
        nanosleep(&pause, NULL);
    }
    return (int)total;
}
EOF
start_scene server "'$osprey' server.c --profile -o server"
wait_for "^listening on :8080" 60 || fail "server: it did not start"
sleep 1.5
tmux_ send-keys -t osprey C-c
end_scene server 60
expect_status 130 "${status:-1}" "server stopped with Ctrl-C"
# (the terminal echoes ^C where the cursor was: at the start of the report's first line)
grep -Eq "^(\^C)?osprey: .* wall, .* CPU, [0-9]+ samples" server.txt ||
  fail "server: no report after Ctrl-C: $(cat server.txt)"
grep -q "serve_request" server.txt || fail "server: serve_request is not in the table"
grep -q "^sampling: " server.txt || fail "server: no sampling: line after Ctrl-C"
grep -q "^osprey: server.c was killed by signal 2" server.txt ||
  fail "server: no line saying the program was interrupted"
[ -s server.raw.json ] || fail "server: no raw profile kept"

# --- a mistyped command -------------------------------------------------------------------------
run_scene typo "'$osprey' reprot hot.raw.json" 30
expect_status 2 "${status:-1}" "mistyped command"
grep -q "^osprey: unknown command 'reprot': did you mean 'osprey report'?$" typo.txt ||
  fail "typo: no suggestion on the screen: $(cat typo.txt)"

# --- --help ---------------------------------------------------------------------------------------
run_scene help "'$osprey' report --help" 30
expect_status 0 "${status:-1}" "osprey report --help"
grep -q "^usage: osprey report RAW" help.txt || fail "help: no usage line on the screen"
grep -q "^ *--inverted" help.txt || fail "help: report's options are not shown"
# Nothing wider than the terminal: the help fits 120 columns.
awk 'length($0) > 120 { exit 1 }' help.txt || fail "help: a line is wider than the terminal"

finish "the terminal shows what osprey prints"
