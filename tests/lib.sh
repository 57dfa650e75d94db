# lib.sh — what the shell end-to-end tests share; sourced, not run. A test counts its failed
# checks in `failures` and ends with `finish "what passed"`.

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# expect_status WANT GOT WHAT
expect_status() {
  if [ "$2" -ne "$1" ]; then fail "$3: exit status $2, expected $1"; fi
}
# expect_one_line FILE PATTERN WHAT: FILE holds exactly one line, matching PATTERN (ERE).
expect_one_line() {
  local lines
  lines=$(wc -l <"$1")
  if [ "$lines" -ne 1 ] || ! grep -Eq "$2" "$1"; then
    fail "$3: expected one line matching '$2', got:"
    cat "$1" >&2
  fi
}
# finish WHAT: exit 1 when any check failed, else say WHAT passed.
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  echo "$1"
}
