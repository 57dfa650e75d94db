#!/bin/sh
# fuzz-ring-seeds.sh GENERATOR REPLAY — the fuzz seeds make-ring-seeds writes (laid out by
# proto/osp_ring_write.h, as the shim writes records) replay through the ring parser.
set -eu
gen=$1
replay=$2
dir=$(mktemp -d /tmp/osprey-ring-seeds-XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$gen" "$dir"
test "$(find "$dir" -type f | wc -l)" -eq 12
"$replay" "$dir"
