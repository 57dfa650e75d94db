#!/usr/bin/env bash
# End-to-end: a frame whose CFA is in another register (proto/osp_unwind.h, OSP_CFA_REG), as
# OpenSSL's AES-GCM code has it. tests/unwind/cfareg.S's cfareg_work keeps the caller's rsp in
# rax, aligns rsp and uses rbp as data, and spins in its own frame and in a callee that keeps
# rax: main -> run_for -> cfareg_work [-> cfareg_mix]. Profiled through the CLI with an unwind
# cache of the test's own, cold (empty: the rows built while it runs) then warm (the rows read
# from the cache): >= 95% of the samples in cfareg_work or cfareg_mix reach main, and the two
# are split as built (both have samples). Before OSP_CFA_REG, 0.0% did (cold and warm: the
# frame-pointer walk through rbp's data). x86_64 only.
# With WORK cfaexpr_work, the same of a frame whose CFA is a DWARF expression reading the
# caller's rsp from the frame (OSP_CFA_DEREF), as OpenSSL's SHA, AES and bignum code has it:
# *(rsp + 40) + 8, rax used as data too. Before OSP_CFA_DEREF, 0.0% did (cold and warm).
# Usage: e2e-unwind-cfareg.sh OSPREY SOURCE_DIR [WORK]
set -uo pipefail

osprey=${1:?usage: e2e-unwind-cfareg.sh OSPREY SOURCE_DIR}
src=${2:?}
fn=${3:-cfareg_work}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
if [ "$(uname -m)" != x86_64 ]; then echo "SKIP: cfareg.S is x86_64's"; exit 77; fi
scratch_dir "unwind-${fn%_work}"

gcc -O2 -g "$src/cfareg.S" "$src/cfareg.c" -o "$work/cfareg" 2>"$work/build.err" ||
  fail "cfareg: build failed: $(cat "$work/build.err")"
"$work/cfareg" 0.1 "$fn" >"$work/plain.out" || fail "cfareg: exit status $? unprofiled"

mkdir -p "$work/cache"
for run in cold warm; do
  XDG_CACHE_HOME="$work/cache" "$osprey" "$work/cfareg" --profile -o "$work/$run" -- 2.0 "$fn" \
    >"$work/$run.out" 2>"$work/$run.err" || fail "$run: osprey exited $? ($(tail -n 3 "$work/$run.err"))"
  grep -Eq '^[0-9a-f]+$' "$work/$run.out" || fail "$run: the program's output changed: $(head -c 200 "$work/$run.out")"
  "$osprey" report "$work/$run.raw.json" -o "$work/$run" --format folded >/dev/null \
    2>"$work/$run-report.err" || fail "$run: osprey report exited $? ($(tail -n 3 "$work/$run-report.err"))"
done

python3 - "$work" "$fn" <<'PY' || fail "stacks through $fn's frame cut (see above)"
import os, sys
from checks import check, finish, read_folded

work, fn = sys.argv[1], sys.argv[2]
for run in ("cold", "warm"):
    rows = [([fr.split(" ")[0] for fr in frames[1:]], count)
            for frames, count in read_folded(os.path.join(work, run + ".folded"))]
    mine = [(fr, c) for fr, c in rows if fn in fr or "cfareg_mix" in fr]
    total = sum(c for fr, c in mine)
    rooted = sum(c for fr, c in mine if "main" in fr and "run_for" in fr)
    mix = sum(c for fr, c in mine if "cfareg_mix" in fr)
    check(total >= 50, "%s: %d samples in %s or cfareg_mix (want >= 50)" % (run, total, fn))
    check(total and rooted / total >= 0.95, "%s: %.1f%% of them reach main through run_for "
          "(want >= 95%%)" % (run, 100.0 * rooted / total if total else 0))
    check(0 < mix < total, "%s: %d of %d in the callee cfareg_mix (want some, not all)"
          % (run, mix, total))
    print("%s: %d of %d samples reach main (%.1f%%), %d in cfareg_mix"
          % (run, rooted, total, 100.0 * rooted / total if total else 0, mix))
finish()
PY

finish "$fn's frame (its CFA not sp or fp + offset): its stacks and its callee's reach main, cold and warm"
