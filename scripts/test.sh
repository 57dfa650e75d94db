#!/usr/bin/env bash
# Run every test: C unit and end-to-end suites, the valgrind setup on the unit suites, the
# unit suites under ASan and UBSan, the Windows and Wasm stub cross-builds, the arm64
# cross-build with its tests under qemu-aarch64, the reader tests
# (tests/readers: outputs of a real run in DevTools' model, go tool pprof, speedscope) and the
# VS Code extension's tests.
# Installs what is missing first (Debian 12).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

werror=()
if [ -n "${CI:-}" ]; then werror=(-Dwerror=true); fi

# A build directory is set up once and reused (ninja rebuilds what changed); a fresh clone,
# as in CI, sets each one up from scratch.
setup() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" "${werror[@]}" >/dev/null
  fi
  ninja -C "$dir"
}

echo "== formatting (.clang-format)"
if git rev-parse --git-dir >/dev/null 2>&1; then
  git ls-files -z '*.c' '*.h' ':!:vscode' | xargs -0 clang-format --dry-run -Werror
else
  find proto shim daemon exporters tools tests fuzz examples bench \( -name '*.c' -o -name '*.h' \) \
    -print0 | xargs -0 clang-format --dry-run -Werror
fi

echo "== shellcheck (.shellcheckrc): every shell script, by name or by its #! line"
shell_scripts() {
  if git rev-parse --git-dir >/dev/null 2>&1; then git ls-files; else find . -type f; fi |
    grep -v -e '^\./\.git/' -e 'node_modules/' -e '^\./build' |
    while IFS= read -r f; do
      case "$f" in
        *.sh) echo "$f" ;;
        *) head -c 64 "$f" 2>/dev/null | head -n 1 | grep -Eq '^#!.*\b(ba)?sh\b' && echo "$f" ;;
      esac
    done
}
mapfile -t scripts < <(shell_scripts)
shellcheck "${scripts[@]}"

setup build-test
# Suites by kind (tests/README.md): unit, lint and the examples side by side; then e2e one test at a time
# (each profiles real programs and holds shares, paces and stacks to bounds: two beside each
# other on a 2-core machine took each other's CPU); then accuracy, whose figures depend on the
# clock, one test at a time with nothing beside it.
meson test -C build-test --print-errorlogs --suite unit --suite lint --suite examples
meson test -C build-test --print-errorlogs --suite e2e --num-processes 1
meson test -C build-test --print-errorlogs --suite accuracy --num-processes 1
meson test -C build-test --setup=valgrind --suite unit --print-errorlogs

echo "== unit suites under AddressSanitizer and UndefinedBehaviorSanitizer (clang)"
# Unit suites only: an e2e test preloads the shim into an uninstrumented program, which the
# ASan runtime refuses (it must be the first library loaded). Of the symbolize suite only the
# fake-tools case runs here: test_real_own_stack (llvm-symbolizer case) takes its stack with
# backtrace(), which ASan intercepts, so the interceptor itself becomes the leaf frame.
CC=clang setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
mapfile -t asan_tests < <(meson test -C build-asan --suite unit --list 2>/dev/null |
  sed -n 's|^[^ ]* / ||p' | grep -vx symbolize)
meson test -C build-asan --print-errorlogs "${asan_tests[@]}"
CK_RUN_CASE=fake-tools meson test -C build-asan --print-errorlogs symbolize
unset ASAN_OPTIONS UBSAN_OPTIONS

echo "== cross-compiling the inactive stubs"
setup build-mingw --cross-file cross/mingw-w64.ini
setup build-wasm --cross-file cross/wasm32-wasi.ini

echo "== arm64: cross-built (cross/aarch64-linux-gnu.ini), run under qemu-aarch64"
# Everything is built: the shim (archive and preload library), ospreyd, the CLI, the tests.
# What runs under emulation: the unit suites, the arm64 unwinder's own (arm64) and the layers
# lint. Not the e2e suite (ospreyd's binary, the collector, the CLI): it starts arm64 programs
# from arm64 ones, which the host's kernel runs only through binfmt_misc (not set up here);
# tests/e2e-arm64.sh starts its program under qemu itself. Then the end-to-end profile of an
# emulated program (shim/README.md, "arm64").
setup build-arm64 --cross-file cross/aarch64-linux-gnu.ini
meson test -C build-arm64 --print-errorlogs arm64 shim unwind proto raw model writers report \
  html cli symbolize waits daemon fuzz-raw fuzz-ring fuzz-walk shim-layers example-hotspot stacks \
  example-coroutines walks
bash tests/e2e-arm64.sh build-arm64 build-test tests/arm64

echo "== the outputs of a real profiled run in the tools that read them"
bash tests/readers/run.sh build-test/tools/osprey

if [ -f vscode/package.json ]; then
  echo "== vscode extension"
  (cd vscode && npm ci --no-audit --no-fund && npm test)
fi
echo "all tests passed"
