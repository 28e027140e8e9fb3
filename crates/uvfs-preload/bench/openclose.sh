#!/usr/bin/env bash
# The lab benchmark of issue 5: will-it-scale's open1 loop (open+close of
# one file) as a C program, on the host's tmpfs and under the shim, same run.
# Usage: crates/uvfs-preload/bench/openclose.sh [iterations]
set -euo pipefail
cd "$(dirname "$0")/../../.."
n=${1:-1000000}
target=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p uvfs-preload
so="$target/release/libuvfs_preload.so"
dir=$(mktemp -d /dev/shm/uvfs-openclose.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cc -O2 -o "$dir/openclose" crates/uvfs-preload/bench/openclose.c
echo "host tmpfs:                      $("$dir/openclose" "$dir" "$((n / 4))")"
echo "host tmpfs, shim loaded:         $(LD_PRELOAD="$so" "$dir/openclose" "$dir" "$((n / 4))")"
echo "uvfs, exact fd numbering:        $(LD_PRELOAD="$so" "$dir/openclose" /uvfs "$((n / 4))")"
echo "uvfs, UVFS_FD_CACHE=16:          $(UVFS_FD_CACHE=16 LD_PRELOAD="$so" "$dir/openclose" /uvfs "$n")"
