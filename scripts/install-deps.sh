#!/usr/bin/env bash
# Install what building and testing Osprey needs on Debian 12, skipping what is present.
# Runs apt-get as root (directly, or through sudo when not root).
set -euo pipefail

packages=(
  meson ninja-build pkg-config gcc clang lld llvm
  libclang-rt-14-dev  # the sanitizer and libFuzzer runtimes; clang only recommends them
  libuv1-dev libjansson-dev check valgrind python3 jq
  shellcheck  # scripts/test.sh checks every shell script with it
  tmux  # the terminal test (tests/e2e-terminal.sh) drives osprey in a real terminal
  procps  # ps and pgrep: e2e-hardening and e2e-forks look at ospreyd's processes
  strace  # e2e-spawn reads which system calls an exec makes
  libdw-dev libelf-dev  # elfutils: the CFI ospreyd evaluates into unwind tables
  libbz2-dev  # libdw's archive needs it (ospreyd links its libraries' archives: prefer_static)
  gcc-mingw-w64-x86-64 wasi-libc
  nodejs npm chromium
  esbuild  # the offline page (exporters/viewer-page.py) is bundled from vscode/src at build time
  libkrb5-dev  # code-server's kerberos module, built for the real-editor test (vscode/test-editor)
  linux-perf google-perftools libgoogle-perftools-dev
  libprotobuf-c-dev protobuf-c-compiler zlib1g-dev  # the pprof output
  golang-go  # go tool pprof, a reader the tests load the pprof output into
  debuginfod curl  # e2e-debuginfod: a stripped binary's names from a real debuginfod server
  rustc  # e2e-names: Rust names in both manglings (v0 needs rustc 1.59 or later; Debian 12 has 1.63)
  # arm64: the cross compiler, qemu-user to run what it builds (the cross file's exe wrapper),
  # and the arm64 libraries from multiarch, which bring the arm64 loader and libc qemu runs
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  libuv1-dev:arm64 libjansson-dev:arm64 libdw-dev:arm64 libelf-dev:arm64 check:arm64
  zlib1g-dev:arm64 libprotobuf-c-dev:arm64 libbz2-dev:arm64
  python3.11-dev  # tests/test-python-layout.c: proto/osp_python.h against CPython 3.11's headers
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node from another source (nodesource, nvm) also does; only ask Debian when node is absent.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  filtered=()
  for p in "${missing[@]}"; do
    case "$p" in nodejs|npm) ;; *) filtered+=("$p") ;; esac
  done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "installing: ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  "${sudo_cmd[@]}" dpkg --add-architecture arm64 # the :arm64 packages above (multiarch)
fi
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
