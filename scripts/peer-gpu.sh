#!/usr/bin/env bash
# Builds peer-gpu-bench (arenaprove's engine on the GPU against bellperson 0.27 +
# supraseal-c2 on the same sectors) and peer-baseline (the baseline's side, which the
# bench runs as its child process; its own workspace, peer-gpu/baseline, so that its sppark
# is the 0.1.13 supraseal-c2 0.1.2 names) here, with the pinned nvcc of
# scripts/install-nvcc.sh, and strips both into DEST (default target-gpu, ignored) to carry
# to the GPU machine.
#
#   bash scripts/peer-gpu.sh [DEST]
#
# It also builds filecoin-baseline (peer-gpu/filecoin-baseline: filecoin-proofs 19.1.0's
# seal_commit_phase2 with cuda-supraseal, the baseline of `arenaprove filecoin bench
# --peer-exe`). filecoin-proofs' GPU features link libcuda at build time (bellperson's
# and neptune's build scripts), which this machine lacks: a stub generated from the
# toolkit's cuda.h (every driver function returns an error) satisfies the linker here and
# is never carried; on the GPU machine the binary loads the real driver.
#   # then on the GPU machine (device tool, carry ["target-gpu"]):
#   target-gpu/peer-gpu-bench --peer-exe target-gpu/peer-baseline --circuit chain \
#       --constraints 1048576 --partitions 10 --sectors 3
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-target-gpu}"
root="$(bash scripts/install-nvcc.sh)"
export PATH="$root/bin:$PATH" CUDA_HOME="$root"
# supraseal-c2's build.rs calls nvcc with its default architectures; the 13.0 toolkit
# needs one named (SASS for the H200, sm_90).
export NVCC_APPEND_FLAGS="${NVCC_APPEND_FLAGS:--gencode arch=compute_90,code=sm_90}"
# The root's target directory: the crates both builds share are compiled once.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release --manifest-path peer-gpu/Cargo.toml
# --locked: baseline/Cargo.lock pins sppark 0.1.13. When the root workspace's dependencies
# change, refresh it: cp peer-gpu/Cargo.lock peer-gpu/baseline/ && (cd peer-gpu/baseline &&
# cargo update -p sppark --precise 0.1.13).
cargo build --release --locked --manifest-path peer-gpu/baseline/Cargo.toml
stub="$PWD/.cache/cuda-stub"
if [ ! -e "$stub/libcuda.so.1" ]; then
  mkdir -p "$stub"
  gcc -E -P -I"$root/include" "$root/include/cuda.h" | grep -oE "^(extern )?CUresult +cu[A-Za-z0-9_]+ *\(" \
    | grep -oE "cu[A-Za-z0-9_]+" | sort -u >"$stub/names.txt"
  (cat "$stub/names.txt"; sed -E 's/_v[0-9]+$//' "$stub/names.txt"; sed -E 's/_v[0-9]+$//; s/$/_v2/' "$stub/names.txt") \
    | sort -u | awk '{print "int " $1 "(void) { return 999; }"}' >"$stub/stub.c"
  gcc -shared -fPIC -o "$stub/libcuda.so.1" -Wl,-soname,libcuda.so.1 "$stub/stub.c"
  ln -sf libcuda.so.1 "$stub/libcuda.so"
fi
LIBRARY_PATH="$stub" LD_LIBRARY_PATH="$stub" \
  cargo build --release --locked --manifest-path peer-gpu/filecoin-baseline/Cargo.toml
mkdir -p "$dest"
for bin in peer-gpu-bench peer-baseline filecoin-baseline; do
  strip -o "$dest/$bin" "$CARGO_TARGET_DIR/release/$bin"
  ls -la "$dest/$bin"
done
