#!/usr/bin/env bash
# Run every test: C unit and end-to-end suites, the valgrind setup on the unit suites, the
# unit suites under ASan and UBSan, the Windows and Wasm stub cross-builds, the reader tests
# (tests/readers: outputs of a real run in DevTools' model, go tool pprof, speedscope) and the
# VS Code extension's tests.
# Installs what is missing first (Debian 12).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

werror=()
if [ -n "${CI:-}" ]; then werror=(-Dwerror=true); fi
rm -rf build-test
meson setup build-test "${werror[@]}" >/dev/null
ninja -C build-test
meson test -C build-test --print-errorlogs
meson test -C build-test --setup=valgrind --suite unit --print-errorlogs

echo "== unit suites under AddressSanitizer and UndefinedBehaviorSanitizer (clang)"
# Unit suites only: an e2e test preloads the shim into an uninstrumented program, which the
# ASan runtime refuses (it must be the first library loaded). Of the symbolize suite only the
# fake-tools case runs here: test_real_own_stack (llvm-symbolizer case) takes its stack with
# backtrace(), which ASan intercepts, so the interceptor itself becomes the leaf frame.
rm -rf build-asan
CC=clang meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
  "${werror[@]}" >/dev/null
ninja -C build-asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
mapfile -t asan_tests < <(meson test -C build-asan --suite unit --list 2>/dev/null |
  sed -n 's|^[^ ]* / ||p' | grep -vx symbolize)
meson test -C build-asan --print-errorlogs "${asan_tests[@]}"
CK_RUN_CASE=fake-tools meson test -C build-asan --print-errorlogs symbolize
unset ASAN_OPTIONS UBSAN_OPTIONS

echo "== cross-compiling the inactive stubs"
rm -rf build-mingw build-wasm
meson setup build-mingw --cross-file cross/mingw-w64.ini "${werror[@]}" >/dev/null
ninja -C build-mingw
meson setup build-wasm --cross-file cross/wasm32-wasi.ini "${werror[@]}" >/dev/null
ninja -C build-wasm

echo "== the outputs of a real profiled run in the tools that read them"
bash tests/readers/run.sh build-test/tools/osprey

if [ -f vscode/package.json ]; then
  echo "== vscode extension"
  (cd vscode && npm ci --no-audit --no-fund && npm test)
fi
echo "all tests passed"
