#!/usr/bin/env bash
# Builds the CUDA backend's test binaries and kernel bench here (nvcc from
# scripts/install-nvcc.sh, no GPU needed), strips them into an ignored folder, and prints
# the command to run on the GPU machine (which has a driver but no Rust).
#
#   bash scripts/gpu-test.sh [DEST]     # DEST defaults to target-gpu (ignored by /target-*)
#
# The run command sets ARENAPROVE_REQUIRE_GPU (default 1: the GPUs the host must have), so
# on the GPU machine a test that cannot open its GPU fails instead of printing SKIP; use
# ARENAPROVE_REQUIRE_GPU=2 on a two-GPU host to require the two-GPU test too.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-target-gpu}"
export ARENAPROVE_REQUIRE_GPU="${ARENAPROVE_REQUIRE_GPU:-1}"
bash scripts/install-nvcc.sh >/dev/null
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
feat=(-p arenaprove-cuda --features kernels --release)
tests_json="$(cargo test "${feat[@]}" --no-run --message-format=json)"
cargo build "${feat[@]}" --example kernel_bench
mkdir -p "$dest"
rm -f "$dest"/*
# Test executables: every test-profile artifact of arenaprove-cuda.
echo "$tests_json" | python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] in ("gpu", "engine", "arenaprove_cuda") \
       and m["profile"]["test"] and m.get("executable"):
        print(m["target"]["name"], m["executable"])
' | while read -r name exe; do
    cp "$exe" "$dest/test-$name"
done
cp "$CARGO_TARGET_DIR/release/examples/kernel_bench" "$dest/kernel_bench"
strip "$dest"/*
ls -la "$dest"
cat <<MSG

Run on the GPU machine (device tool: carry ["$dest"], results under \$OUT):
  set -o pipefail; export ARENAPROVE_REQUIRE_GPU=$ARENAPROVE_REQUIRE_GPU; for t in $dest/test-*; do \$t --test-threads=1 --nocapture 2>&1 | tee -a \$OUT/tests.log || exit 1; done; $dest/kernel_bench 2>&1 | tee \$OUT/bench.log
MSG
