#!/bin/bash
# bench/field/both.sh NAME BUILD OUT -- COMMAND [ARGS...] — one case of a field round: run.sh
# and check.sh as root (outputs under OUT/root) and as nobody (setpriv, under OUT/nobody, which
# nobody may write); run by another user, only as that user, under OUT/nobody.
set -u
here=$(cd "$(dirname "$0")" && pwd)
name=$1 build=$2 out=$3
shift 4
case $(id -u) in
0)
  FIELD_OUT=$out/root bash "$here/run.sh" "$name" "$build" -- "$@" | sed 's/^/root   /'
  bash "$here/check.sh" "$build" "$out/root/$name"
  setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp FIELD_OUT="$out/nobody" \
    bash "$here/run.sh" "$name" "$build" -- "$@" | sed 's/^/nobody /'
  bash "$here/check.sh" "$build" "$out/nobody/$name"
  ;;
*)
  FIELD_OUT=$out/nobody bash "$here/run.sh" "$name" "$build" -- "$@"
  bash "$here/check.sh" "$build" "$out/nobody/$name"
  ;;
esac
