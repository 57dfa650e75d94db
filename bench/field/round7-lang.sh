#!/bin/bash
# bench/field/round7-lang.sh BUILD [OUT] [CASE...] — round 7 of the programs nobody here had
# profiled, languages and runtimes: installs their Debian packages (as root), builds
# bench/field/progs/lang (Java, OCaml native, gfortran OpenMP, Ada tasks, Free Pascal, a Go
# net/http server under load, Rust catch_unwind, a C++20 coroutine), makes the inputs, then
# runs every case (or the CASEs named) through run.sh as root and as nobody (setpriv, outputs
# under OUT/nobody, OUT of mode 777) and check.sh on each run's outputs. A case whose tools
# are missing is skipped with one line. One heavy program at a time. Needs root.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
out=${2:-/tmp/osprey-field7-lang}
shift $(($# >= 2 ? 2 : 1))

# Every package a case needs, each installed once if its command is missing.
need() { # COMMAND PACKAGE
  command -v "$1" >/dev/null && return
  [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null 2>&1
}
need javac openjdk-17-jdk-headless
need pandoc pandoc
need ocamlfind ocaml-findlib
need ocamlopt ocaml-nox
need erl erlang-base
need ruby ruby
need php php-cli
need sbcl sbcl
need gfortran gfortran
need gnatmake gnat
need fpc fpc
need go golang-go
need g++ g++
need perf linux-perf

mkdir -p "$out/bin" "$out/root" "$out/nobody"
chmod 777 "$out" "$out/nobody"
chmod 755 "$out/bin" "$out/root"
bin=$out/bin
progs=$here/progs/lang
rustc=/usr/bin/rustc
[ -x "$rustc" ] || rustc=rustc

# Each build once (a missing compiler leaves its program missing: the case is then skipped).
built() { [ -e "$bin/$1" ]; }
(
  cd "$bin" || exit 1
  built Spin.class || { command -v javac >/dev/null && javac -d "$bin" "$progs/Spin.java"; }
  built ocamlspin || { command -v ocamlfind >/dev/null &&
    cp "$progs/spin.ml" . && ocamlfind ocamlopt -g spin.ml -o ocamlspin; }
  built omp || { command -v gfortran >/dev/null && gfortran -O2 -g -fopenmp -o omp "$progs/omp.f90"; }
  built tasks || { command -v gnatmake >/dev/null && cp "$progs/tasks.adb" . &&
    gnatmake -q -O2 -g tasks.adb >/dev/null; }
  built passpin || { command -v fpc >/dev/null && cp "$progs/spin.pas" passpin.pas &&
    fpc -O2 -g -gl passpin.pas >/dev/null; }
  built httpload || { command -v go >/dev/null && cp "$progs/httpload.go" . &&
    GO111MODULE=off GOCACHE=$bin/.gocache go build -o httpload httpload.go; }
  built panics || "$rustc" -O -g -o panics "$progs/panics.rs"
  built coro || g++ -std=c++20 -fcoroutines -O2 -g -o coro "$progs/coro.cc"
  cp "$progs"/spin.rb "$progs"/spin.php "$progs"/spin.lisp "$bin/"
  # A large markdown file: sections, lists, emphasis, code and tables.
  if ! built big.md; then
    for i in $(seq 1 1500); do
      # shellcheck disable=SC2016 # markdown's backquotes
      printf '## Section %d\n\nSome *emphasis* and **strong** text with `code` and a [link](http://x/%d).\n\n' "$i" "$i"
      # shellcheck disable=SC2016 # markdown's backquotes
      printf -- '- item one of %d\n- item two\n  1. nested\n\n| a | b |\n|---|---|\n| %d | x |\n\n```\ncode %d\n```\n\n' "$i" "$i" "$i"
    done >big.md
  fi
) || true
chmod -R a+rwX "$bin"

cases=(java java-fp java-map pandoc ocaml erlang erlang-map ruby php sbcl fortran-omp ada fpc gohttp rust-panics
  cxx-coro)
[ $# -gt 0 ] && cases=("$@")
java_class=(-cp "$bin" Spin 16)
erl_fib='F = fun Fib(N) when N < 2 -> N; Fib(N) -> Fib(N-1) + Fib(N-2) end, io:format("~p~n", [F(27)]), halt().'
command_of() {
  case $1 in
  java) cmd=(java "${java_class[@]}") ;;
  java-fp) cmd=(java -XX:+PreserveFramePointer "${java_class[@]}") ;;
  java-map) cmd=(java -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit
    "${java_class[@]}") ;;
  pandoc) cmd=(pandoc -f markdown -t html "$bin/big.md") ;;
  ocaml) cmd=("$bin/ocamlspin" 10) ;;
  erlang) cmd=(erl -noshell -eval "$erl_fib") ;;
  erlang-map) cmd=(erl +JPperf map -noshell -eval "$erl_fib") ;;
  ruby) cmd=(ruby "$bin/spin.rb" 8) ;;
  php) cmd=(php "$bin/spin.php" 8) ;;
  sbcl) cmd=(sbcl --script "$bin/spin.lisp" 10) ;;
  fortran-omp) cmd=(env OMP_NUM_THREADS=2 "$bin/omp" 20) ;;
  ada) cmd=("$bin/tasks" 10) ;;
  fpc) cmd=("$bin/passpin" 400) ;; # statically linked: attached to (below)
  gohttp) cmd=("$bin/httpload" 3) ;;
  rust-panics) cmd=("$bin/panics" 600000) ;;
  cxx-coro) cmd=("$bin/coro" 3000000) ;;
  *) cmd=() ;;
  esac
}
for c in "${cases[@]}"; do
  command_of "$c"
  prog=${cmd[0]:-}
  [ "$prog" = env ] && prog=${cmd[2]}
  if [ -z "$prog" ] || ! command -v "$prog" >/dev/null; then
    echo "$c: skipped (${prog:-unknown case}: not installed or not built)"
    continue
  fi
  if [ "$c" = fpc ]; then
    # No preload into a static program: `osprey attach PID --duration 2` a second into its run,
    # its stdout compared with a plain run's.
    for who in root nobody; do
      as=()
      [ "$who" = nobody ] && as=(setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp)
      [ "$(id -u)" != 0 ] && { [ "$who" = root ] && continue; as=(); }
      "${as[@]}" "${cmd[@]}" >"$out/$who/$c.plain.out"
      "${as[@]}" "${cmd[@]}" >"$out/$who/$c.attached.out" &
      pid=$!
      sleep 1
      "${as[@]}" "$build/tools/osprey" attach "$pid" --duration 2 -o "$out/$who/$c" \
        >"$out/$who/$c.prof.err" 2>&1
      attach_status=$?
      wait "$pid"
      status=$?
      same=same
      cmp -s "$out/$who/$c.plain.out" "$out/$who/$c.attached.out" || same=DIFFERENT
      printf '%-6s %s: attach exit %d, program exit %d, stdout %s\n' "$who" "$c" "$attach_status" \
        "$status" "$same"
      bash "$here/check.sh" "$build" "$out/$who/$c"
    done
    continue
  fi
  bash "$here/both.sh" "$c" "$build" "$out" -- "${cmd[@]}"
done
