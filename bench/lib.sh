# shellcheck shell=bash
# lib.sh — what the benchmark scripts share; sourced, not run, by their own directory:
#   . "$(dirname "$0")/../lib.sh"
#   bench_dirs "${1:-}"

# bench_dirs [BUILD_DIR]: here (the script's folder), root (the checkout) and build (BUILD_DIR,
# else ROOT/build), each an absolute path.
# shellcheck disable=SC2034 # here, root and build are the calling script's
bench_dirs() {
  here=$(cd "$(dirname "$0")" && pwd)
  root=$(cd "$here/../.." && pwd)
  build=$(cd "${1:-$root/build}" && pwd)
}
