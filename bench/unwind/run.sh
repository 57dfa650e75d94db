#!/usr/bin/env bash
# bench/unwind/run.sh [BUILD_DIR] [unwind.py options…] — Osprey's .eh_frame stacks on Debian's
# own programs beside perf (frame pointers and DWARF), and the cost on frameless code. Installs
# what it needs when missing (apt-get, as root or through sudo), builds BUILD_DIR (default
# build/) if it holds no ospreyd, lowers kernel.perf_event_paranoid for the run (put back at
# the end), then runs bench/unwind/unwind.py. Examples:
#   bash bench/unwind/run.sh build --markdown bench/unwind/RESULTS.md
#   bash bench/unwind/run.sh build --only python3.11,cc1 --no-cost --keep /tmp/unwind
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=build
if [[ $# -gt 0 && $1 != -* ]]; then
    build=$1
    shift
fi
[[ $build = /* ]] || build=$root/$build

as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        echo "bench/unwind: needs root for: $*" >&2
        return 1
    fi
}

# command → Debian package; only what is missing is installed.
declare -A packages=(
    [python3.11]=python3.11-minimal [sqlite3]=sqlite3 [perl]=perl-base [lua5.4]=lua5.4
    [gcc]=gcc [redis-server]=redis-server [redis-cli]=redis-tools
    [redis-benchmark]=redis-tools [perf]=linux-perf [llvm-symbolizer]=llvm
    [meson]=meson [ninja]=ninja-build [python3]=python3
)
missing=()
for cmd in "${!packages[@]}"; do
    if [[ $cmd = python3.11 ]]; then  # Debian's own, not a python3.11 from pyenv or venv
        [[ -x /usr/bin/python3.11 ]] || missing+=("${packages[$cmd]}")
    else
        command -v "$cmd" >/dev/null 2>&1 || missing+=("${packages[$cmd]}")
    fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    echo "bench/unwind: installing ${missing[*]}" >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || true
    # One at a time, so one package the machine cannot have does not keep the others out.
    for pkg in "${missing[@]}"; do
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >&2 ||
            echo "bench/unwind: could not install $pkg; its program is left out" >&2
    done
fi
# A distribution's redis-server package starts a server of its own; it does not use our port.

if [[ ! -x $build/daemon/ospreyd || ! -f $build/shim/libospreyprof.so ]]; then
    if [[ ! -f $build/build.ninja ]]; then
        meson setup "$build" "$root" -Dbuildtype=debugoptimized >&2
    fi
fi
ninja -C "$build" >&2

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
restore() {
    if [[ $(cat /proc/sys/kernel/perf_event_paranoid) != "$paranoid" ]]; then
        as_root sysctl -q -w kernel.perf_event_paranoid="$paranoid" || true
    fi
}
if [[ $paranoid -gt -1 ]]; then
    as_root sysctl -q -w kernel.perf_event_paranoid=-1
    trap restore EXIT
fi

cd "$root"
shown=$(printf ' %q' "$@")
python3 "$here/unwind.py" --build "$build" --argv "${build#"$root"/}${shown}" "$@"
