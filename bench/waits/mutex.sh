#!/usr/bin/env bash
# The uncontended mutex's hot path, where the shim times the futex-based waits itself
# (perf_event_open refused): pthread_mutex_lock is interposed, and tries the lock first, so only
# a lock that would block pays the guard. Instructions per lock and unlock (callgrind,
# repeatable whatever the machine's load) plain, with the archive and the preload library off
# and on, and on under `tests/refuse perf_event_open` (the waits timed by the calls): bench/guard/run.sh, a round
# being the mutex alone.
# Usage: bash bench/waits/mutex.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
bench_dirs "${1:-}"
exec bash "$root/bench/guard/run.sh" "$build" "${2:-200000}" mutex "$build/tests/refuse"
