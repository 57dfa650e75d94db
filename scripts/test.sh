#!/usr/bin/env bash
# Run every test: C unit and end-to-end suites, the valgrind setup on the unit suites,
# the Windows and Wasm stub cross-builds, and the VS Code extension's tests.
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

echo "== cross-compiling the inactive stubs"
rm -rf build-mingw build-wasm
meson setup build-mingw --cross-file cross/mingw-w64.ini "${werror[@]}" >/dev/null
ninja -C build-mingw
meson setup build-wasm --cross-file cross/wasm32-wasi.ini "${werror[@]}" >/dev/null
ninja -C build-wasm

if [ -f vscode/package.json ]; then
  echo "== vscode extension"
  (cd vscode && npm ci --no-audit --no-fund && npm test)
fi
echo "all tests passed"
