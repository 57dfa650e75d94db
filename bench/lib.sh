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

# bench_befores DIR...: each DIR (another build's libospreyprof.so and ospreyd) as a variant
# "refused:NAME" appended to the caller's `variants`, its absolute path in `before_dir[...]`
# (the caller declares `declare -A before_dir` first).
# shellcheck disable=SC2034,SC2004 # variants and before_dir (associative) are the calling script's
bench_befores() {
  local dir label
  for dir in "$@"; do
    label="refused:$(basename "$dir")"
    before_dir[$label]=$(cd "$dir" && pwd)
    variants+=("$label")
  done
}
