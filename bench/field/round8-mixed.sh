#!/bin/bash
# bench/field/round8-mixed.sh BUILD [OUT] [CASE...] — round 8 of the programs nobody here had
# profiled: programs that block and burst, with many threads or many processes, where the
# collector is likeliest to fall behind or time a wait wrongly. Each case runs through both.sh
# (run.sh and check.sh as root and as nobody, outputs under OUT/root and OUT/nobody), then
# lost.py on both raw files (drops, the collector's lateness, waits, CPU paid in heavy rows);
# the servers (openssl s_server, python3's http.server) under `osprey --profile --duration N`
# with their load inside the window, then attached. BESIDE=1 also runs beside-perf.sh (DWARF)
# and waits-perf.sh for the cases that compute or wait in one process. The case node-pairs
# (BEFORE=ANOTHER_BUILD) runs the node case under both builds in turn, three times: the
# collector's unwind rows and bytes, its longest lateness and CPU, the switch records lost. Builds
# bench/field/progs/mixed (Go with cgo, Rust, node) and installs what is missing (root); a case
# that cannot run is skipped with one line.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
out=${2:-/tmp/osprey-field8}
shift $(($# >= 2 ? 2 : 1))
osprey=$build/tools/osprey
mkdir -p "$out/bin" "$out/root" "$out/nobody" "$out/srv"
chmod 777 "$out" "$out/nobody" "$out/srv"
chmod 755 "$out/bin" "$out/root"
bin=$out/bin
progs=$here/progs/mixed

# Debian's packages, each installed only where its command is missing (root).
for pair in sqlite3:sqlite3 git:git make:make zstd:zstd openssl:openssl gpg:gnupg \
  ssh-keygen:openssh-client curl:curl go:golang-go node:nodejs perf:linux-perf; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || [ "$(id -u)" != 0 ] ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${pair#*:}" \
      >>"$out/apt.log" 2>&1
done
have() { command -v "$@" >/dev/null 2>&1; } # have COMMAND...: each one is on the PATH
# Debian's rustc, not a rustup shim on root's PATH that nobody cannot run.
rustc=/usr/bin/rustc
[ -x "$rustc" ] || rustc=$(command -v rustc)

# The programs and inputs, made once.
if [ ! -s "$bin/fsync.sql" ]; then
  (cd "$progs" && GO111MODULE=off go build -o "$bin/chan" chan.go) || echo "chan.go: not built"
  [ -n "$rustc" ] && "$rustc" -O -g -o "$bin/chanrs" "$progs/chan.rs"
  cp "$progs/timers.js" "$bin/"
  {
    echo 'PRAGMA journal_mode=DELETE;'
    echo 'PRAGMA synchronous=FULL;'
    echo 'CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);'
    for _ in $(seq 1 300); do echo 'INSERT INTO t(v) VALUES(hex(randomblob(64)));'; done
    echo 'SELECT count(*) FROM t;'
  } >"$bin/fsync.sql"
  # A C project of 16 files for make -j2: gcc, cc1, as and ld, many short processes.
  mkdir -p "$bin/proj"
  objs=main.o
  for i in $(seq 1 16); do
    printf '#include <stdio.h>\n#include <string.h>\nint f%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i %% 7; return s; }\n' "$i" >"$bin/proj/f$i.c"
    objs="$objs f$i.o"
  done
  printf 'int main(void) { return 0; }\n' >"$bin/proj/main.c"
  # shellcheck disable=SC2016 # make's variables, not the shell's
  printf 'OBJS = %s\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n%%.o: %%.c\n\t$(CC) -O2 -g -c -o $@ $<\n' "$objs" >"$bin/proj/Makefile"
  git clone -q --no-local "$here/../.." "$bin/repo" 2>/dev/null || git clone -q /work/main "$bin/repo"
  openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 30 \
    -keyout "$bin/key.pem" -out "$bin/cert.pem" 2>/dev/null
  mkdir -p "$bin/www"
  head -c 200000 /usr/share/common-licenses/GPL-3 >"$bin/www/index.html"
  chmod -R a+rwX "$bin"
fi

cases=(sqlite-fsync rs-chan go-chan node-timers tar-zstd make-j2 git-grep ssh-keygen-rsa
  gpg-genkey s_server http-server)
[ $# -gt 0 ] && cases=("$@")

# One case through both.sh, then what its raw files say they lost.
field() { # NAME COMMAND...
  local name=$1
  shift
  have "$1" || { echo "$name: skipped: no $1"; return; }
  bash "$here/both.sh" "$name" "$build" "$out" -- "$@"
  for who in root nobody; do
    [ -e "$out/$who/$name.raw.json" ] || { echo "$name $who: no raw file"; continue; }
    echo "$who $(grep -E '^osprey:|^warning|achieved|dropped|lost|sampl.*stopped' \
      "$out/$who/$name.prof.err" | head -4 | paste -sd ' ')"
    python3 "$here/lost.py" "$out/$who/$name.raw.json" | tail -n +2 | head -8
  done
  if [ "${BESIDE:-0}" = 1 ] && [ "$(id -u)" = 0 ]; then
    DWARF=1 bash "$here/beside-perf.sh" "$build" "$out/root/$name" -- "$@"
    COMMS=${COMMS:-.} bash "$here/waits-perf.sh" "$@"
  fi
}

# A server under osprey --profile --duration SECONDS with LOAD inside the window, then
# attached for 3 s under the same load, then stopped.
server() { # NAME SECONDS "LOAD" -- SERVER ARGS...
  local name=$1 seconds=$2 load=$3 stem=$out/root/$1
  shift 4
  have "$1" || { echo "$name: skipped: no $1"; return; }
  rm -f "$stem".raw*.json "$stem.err" "$stem-attach".raw*.json
  # In a session of its own, stdin closed: the server is osprey's child.
  NO_COLOR=1 setsid "$osprey" "$1" --profile --duration "$seconds" -o "$stem" -- "${@:2}" \
    >"$stem.out" 2>"$stem.err" </dev/null &
  local run=$!
  sleep 1.5
  bash -c "$load" >"$stem.load" 2>&1
  echo "$name: load: $(tail -2 "$stem.load" | paste -sd ' ')"
  for _ in $(seq 60); do grep -q '^written:' "$stem.err" 2>/dev/null && break; sleep 0.5; done
  local pid
  pid=$(pgrep -o -P "$run")
  (cd "$out/root" && NO_COLOR=1 "$osprey" attach "$pid" --duration 3 -o "$stem-attach" \
    >/dev/null 2>"$stem-attach.err") &
  sleep 0.3
  bash -c "$load" >"$stem-attach.load" 2>&1
  wait $!
  echo "$name: attach: $(grep -E '^osprey:|achieved|dropped|lost' "$stem-attach.err" | head -3 | paste -sd ' ')"
  kill "$pid" 2>/dev/null
  wait "$run"
  echo "$name: osprey exit $?"
  echo "$name: $(grep -E '^osprey:|achieved|dropped|lost|stopped' "$stem.err" | head -4 | paste -sd ' ')"
  bash "$here/check.sh" "$build" "$stem"
  python3 "$here/lost.py" "$stem.raw.json" "$stem-attach.raw.json"
}

# shellcheck disable=SC2016 # the inner shells' variables
for c in "${cases[@]}"; do
  case $c in
  sqlite-fsync)
    # Each insert its own transaction, synchronous=FULL: a journal written, fsynced, deleted.
    field "$c" sh -c 'db=$(mktemp -u /tmp/osprey-fsync.XXXXXX); sqlite3 "$db" ".read '"$bin"'/fsync.sql"; s=$?; rm -f "$db" "$db-journal"; exit $s' ;;
  rs-chan) field "$c" "$bin/chanrs" 20000 ;;
  go-chan) field "$c" "$bin/chan" 20000 ;;
  node-timers)
    field "$c" sh -c 'd=$(mktemp -d /tmp/osprey-node.XXXXXX); node '"$bin"'/timers.js "$d" 400; s=$?; rm -rf "$d"; exit $s' ;;
  tar-zstd) field "$c" sh -c "tar -C /usr/include -cf - . | zstd -T2 -3 -c | md5sum" ;;
  make-j2)
    field "$c" sh -c 'd=$(mktemp -d /tmp/osprey-make.XXXXXX); cp '"$bin"'/proj/* "$d"; make -s -j2 -C "$d" CC=gcc; s=$?; rm -rf "$d"; exit $s' ;;
  git-grep) field "$c" git -c safe.directory='*' -C "$bin/repo" grep -n -I --threads 2 -e 'osp__[a-z_]*(' -e 'ospx_[a-z]*' ;;
  ssh-keygen-rsa)
    field "$c" sh -c 'k=$(mktemp -u /tmp/osprey-key.XXXXXX); ssh-keygen -q -t rsa -b 4096 -N "" -f "$k"; s=$?; rm -f "$k" "$k.pub"; exit $s' ;;
  gpg-genkey)
    # A fresh home each run: gpg starts gpg-agent, a daemon, which is stopped after.
    field "$c" sh -c 'h=$(mktemp -d /tmp/osprey-gpg.XXXXXX); gpg --homedir "$h" --batch --quiet --passphrase "" --quick-gen-key "Field <field@example.com>" rsa2048 2>/dev/null; s=$?; gpgconf --homedir "$h" --kill all; rm -rf "$h"; exit $s' ;;
  s_server)
    have openssl || { echo "$c: skipped: no openssl"; continue; }
    server "$c" 6 "openssl s_time -connect 127.0.0.1:8841 -new -time 3 2>&1 | grep -E 'connections in|real seconds'" -- \
      openssl s_server -quiet -accept 8841 -cert "$bin/cert.pem" -key "$bin/key.pem" -www ;;
  http-server)
    server "$c" 6 "for i in \$(seq 1 300); do curl -s -o /dev/null -w '%{http_code}\n' http://127.0.0.1:8842/index.html; done | sort | uniq -c" -- \
      /usr/bin/python3 -m http.server --bind 127.0.0.1 --directory "$bin/www" 8842 ;;
  node-pairs)
    [ -x "${BEFORE:-}/tools/osprey" ] || { echo "$c: skipped: BEFORE is no build"; continue; }
    for _ in 1 2 3; do
      for b in "$BEFORE" "$build"; do
        d=$(mktemp -d /tmp/osprey-node.XXXXXX)
        rm -f "$out/root/pairs".raw*.json
        "$b/tools/osprey" node --profile -o "$out/root/pairs" -- "$bin/timers.js" "$d" 400 \
          >/dev/null 2>&1
        rm -rf "$d"
        python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); c = r["collector"]; u = c["unwind"]
print("%s: rows %d, %.1f MB, late %.0f ms, collector %d ms CPU, switch records lost %d, dropped %d" % (
    sys.argv[2], u["rows"], u["bytes"] / 1e6, c["longest_late_us"] / 1e3, c["cpu_ms"],
    r["waits"]["lost_records"], r["dropped"]))' "$out/root/pairs.raw.json" "$b"
      done
    done ;;
  *) echo "$c: no such case" ;;
  esac
done
