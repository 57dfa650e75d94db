#!/bin/bash
# bench/field/round6.sh BUILD [OUT] [CASE...] — round 6 of the programs nobody here had
# profiled: builds bench/field/progs (Go with and without cgo, Rust and C++ threads), makes the
# inputs, then runs every case (or the CASEs named) through run.sh as root and as nobody
# (setpriv, outputs under OUT/nobody, OUT of mode 777) and check.sh on each run's outputs.
# One heavy program at a time; runs of a few seconds. Needs root (for nobody's runs).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
out=${2:-/tmp/osprey-field6}
shift $(($# >= 2 ? 2 : 1))
mkdir -p "$out/bin" "$out/root" "$out/nobody"
chmod 777 "$out" "$out/nobody"
chmod 755 "$out/bin" "$out/root"
bin=$out/bin
progs=$here/progs

if [ ! -x "$bin/gospincgo" ]; then
  (cd "$progs" && GO111MODULE=off CGO_ENABLED=0 go build -o "$bin/gospin" spin.go &&
    GO111MODULE=off go build -o "$bin/gospincgo" spin.go spincgo.go)
  g++ -O2 -g -pthread -o "$bin/cxxthreads" "$progs/threads.cc"
  /usr/bin/rustc -O -g -o "$bin/rsthreads" "$progs/rsthreads.rs"
  cp "$progs"/*.py "$progs"/*.pl "$progs"/*.lua "$progs"/*.tcl "$bin/"
  head -c 6000000 /dev/urandom | base64 -w 76 >"$bin/big.txt"
  head -c 1500000 "$bin/big.txt" >"$bin/mid.txt"
  printf 'scale=2000\n4*a(1)\nquit\n' >"$bin/pi.bc"
  python3 -c 'import json; print(json.dumps([{"a": i, "b": "x%d" % (i * 7919 % 1000), "c": [i, i * 2]} for i in range(300000)]))' >"$bin/rows.json"
  # A small C project for make -j2: gcc, cc1, as and ld in turn.
  mkdir -p "$bin/proj"
  for i in 1 2 3 4 5 6; do
    printf '#include <stdio.h>\nint f%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i %% 7; return s; }\n' "$i" >"$bin/proj/f$i.c"
  done
  printf 'int main(void) { return 0; }\n' >"$bin/proj/main.c"
  # shellcheck disable=SC2016 # make's variables, not the shell's
  printf 'OBJS = main.o f1.o f2.o f3.o f4.o f5.o f6.o\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n%%.o: %%.c\n\t$(CC) -O2 -g -c -o $@ $<\n' >"$bin/proj/Makefile"
  chmod -R a+rwX "$bin"
fi

cases=(xzT2 bzip2 lz4 gzip sort find tar bc openssl-multi pythreads perl lua jq gospincgo rsthreads
  cxxthreads make tcl bashloop valgrind xargs)
[ $# -gt 0 ] && cases=("$@")
command_of() {
  case $1 in
  xzT2) echo xz -6 -T2 -c "$bin/big.txt" ;;
  bzip2) echo bzip2 -9 -c "$bin/big.txt" ;;
  lz4) echo lz4 -9 -c "$bin/big.txt" ;;
  gzip) echo gzip -9 -c "$bin/big.txt" ;;
  sort) echo sort --parallel=2 -S 32M "$bin/big.txt" ;;
  tar) echo tar -C /usr/include -cf - . ;;
  bc) echo bc -lq "$bin/pi.bc" ;;
  openssl-multi) echo openssl speed -seconds 2 -multi 2 -evp aes-128-gcm ;;
  pythreads) echo /usr/bin/python3 "$bin/pythreads.py" 3 ;;
  perl) echo perl "$bin/words.pl" "$bin/mid.txt" ;;
  lua) echo lua5.4 "$bin/nbody.lua" 32 ;;
  gospincgo) echo "$bin/gospincgo" 60 ;;
  rsthreads) echo "$bin/rsthreads" 10 ;;
  cxxthreads) echo "$bin/cxxthreads" 60000 ;;
  make) echo make -s -C "$bin/proj" -B CC=gcc ;;
  tcl) echo tclsh "$bin/loop.tcl" ;;
  valgrind) echo valgrind -q --tool=none /bin/ls /usr ;;
  esac
}
for c in "${cases[@]}"; do
  read -r -a cmd <<<"$(command_of "$c")"
  # These two have arguments with spaces or a pattern: given as words here.
  [ "$c" = find ] && cmd=(find /usr/share -size +20k -name '*.gz')
  [ "$c" = jq ] && cmd=(jq -c '[.[] | select(.a % 3 == 0) | .b] | unique | length' "$bin/rows.json")
  # shellcheck disable=SC2016 # the inner shell's variables
  [ "$c" = bashloop ] && cmd=(bash -c 'i=0; s=0; while [ $i -lt 60000 ]; do s=$(( (s + i*i) % 1000003 )); i=$((i+1)); done; echo $s')
  [ "$c" = xargs ] && cmd=(sh -c "seq 1 40 | xargs -P2 -n1 sh -c 'b2sum $bin/mid.txt >/dev/null; echo \$0' | sort -n")
  bash "$here/both.sh" "$c" "$build" "$out" -- "${cmd[@]}"
done
