#!/usr/bin/env bash
# Real Filecoin sectors on the GPU machine, with the binary built here:
#
#   CUDA_HOME=$(bash scripts/install-nvcc.sh | tail -1) PATH="$CUDA_HOME/bin:$PATH" \
#     cargo build --release -p arenaprove-tools --features cuda,serve
#   mkdir -p target-gpu && strip -o target-gpu/arenaprove target/release/arenaprove
#   # device tool, carry ["target-gpu"]:
#   bash scripts/gpu-filecoin.sh small     # 2 KiB and 8 MiB: seal, C2 on CPU and GPU
#                                          # (same r, s: bytes compared), verify_seal,
#                                          # witness serial vs parallel, bench vs filecoin-proofs
#   bash scripts/gpu-filecoin.sh 512MiB    # the same for a 512 MiB sector
#   bash scripts/gpu-filecoin.sh 32GiB     # parallel witness of a 32 GiB partition (random C1)
#   bash scripts/gpu-filecoin.sh params-32GiB  # full-size development parameters: the
#                                          # recording, then the file with its points made on
#                                          # the GPU (PARAMS_BACKEND=cpu: on the CPU), then a
#                                          # timed checked load (subgroup tests on the GPU;
#                                          # CHECKED_LOAD=0: later, by checked-load-32GiB)
#   SECTORS=3 SLOTS=4 bash scripts/gpu-filecoin.sh timing-32GiB   # TIMING ONLY: full-size
#                                          # sectors (random C1s, shape-only parameters);
#                                          # DEVICE_MEMORY=24GiB: within that budget
#   SECTORS=20 bash scripts/gpu-filecoin.sh soak   # real 8 MiB sectors sealed and proven on
#                                          # the GPU, each verified; peak RSS against the plan
#
# Logs go to $OUT (default ./gpu-filecoin-out); summary.log has one line per check.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-filecoin-out}"
mkdir -p "$OUT"
B="${ARENAPROVE_BIN:-target-gpu/arenaprove}"
PC="${PARAM_CACHE:-/tmp/arenaprove-fc-params}"
mkdir -p "$PC"
export ARENAPROVE_REQUIRE_GPU="${ARENAPROVE_REQUIRE_GPU:-1}"
summary() { echo "$*" | tee -a "$OUT/summary.log"; }
fc() { "$B" filecoin --param-cache "$PC" "$@"; }

# seal, C2 on both backends with the same r and s, verify both, compare bytes.
sector() {
  local size=$1 d="/tmp/arenaprove-sector-$1"
  rm -rf "$d"
  local t0=$SECONDS
  fc seal --sector-size "$size" --out "$d" --rng-seed 21 >"$OUT/seal-$size.log" 2>&1 \
    || { summary "$size: seal FAILED"; tail -5 "$OUT/seal-$size.log"; return 1; }
  summary "$size: sealed (params generated if absent) in $((SECONDS - t0)) s"
  for be in cpu gpu; do
    t0=$SECONDS
    if fc c2 --c1 "$d/c1.json" --out "$d/proof-$be" --backend "$be" --insecure-randomness-seed 5 \
      >"$OUT/c2-$size-$be.log" 2>&1; then
      summary "$size: c2 --backend $be in $((SECONDS - t0)) s: $(grep -m1 'partition(s)' "$OUT/c2-$size-$be.log")"
    else
      summary "$size: c2 --backend $be FAILED"; tail -5 "$OUT/c2-$size-$be.log"; continue
    fi
    summary "$size: verify_seal on the $be proof: $(fc verify --c1 "$d/c1.json" --sector "$d/sector.json" --proof "$d/proof-$be" 2>&1 | tail -1)"
  done
  if cmp -s "$d/proof-cpu" "$d/proof-gpu"; then
    summary "$size: GPU proof byte-identical to the CPU proof (same r, s)"
  else
    summary "$size: GPU proof DIFFERS from the CPU proof"
  fi
}

witness() {
  local size=$1 runs=$2; shift 2
  fc witness --sector-size "$size" --runs "$runs" "$@" >"$OUT/witness-$size.log" 2>&1
  summary "$(tail -1 "$OUT/witness-$size.log")"
}

# Against filecoin-proofs + supraseal when scripts/peer-gpu.sh built its baseline into
# target-gpu, else against the CPU seal_commit_phase2 in this process.
bench() {
  local size=$1 runs=$2 peer=()
  [ -x target-gpu/filecoin-baseline ] && peer=(--peer-exe target-gpu/filecoin-baseline)
  fc bench --sector-size "$size" --backend gpu --runs "$runs" "${peer[@]}" >"$OUT/bench-$size.log" 2>&1
  summary "$(grep -A1 '^filecoin c2' "$OUT/bench-$size.log" | tr '\n' ' ')"
}

# SECTORS real sectors sealed and proven on the GPU, every proof checked by verify_seal,
# peak RSS against the plan.
soak() {
  local size=$1
  fc soak --sector-size "$size" --sectors "${SECTORS:-20}" --backend gpu >"$OUT/soak-$size.log" 2>&1
  summary "soak $size: $(tail -25 "$OUT/soak-$size.log")"
}

case "${1:-small}" in
  small)
    for size in 2KiB 8MiB; do sector "$size"; done
    witness 8MiB 3
    bench 2KiB 1
    bench 8MiB 2
    ;;
  soak)
    soak 8MiB
    ;;
  512MiB)
    sector 512MiB
    witness 512MiB 2
    ;;
  32GiB | 64GiB)
    witness "$1" 1 --random
    ;;
  params-32GiB | params-64GiB)
    # Issue 24 item 1: development parameters for the full-size circuit, streamed from its
    # recording (made first, or mapped from the cache), the points made by PARAMS_BACKEND
    # (default gpu; the ten-minute budget), then (CHECKED_LOAD=0: not in this command) the
    # timed checked load below. The file stays in PARAM_CACHE.
    size=${1#params-}
    t0=$SECONDS
    fc params --sector-size "$size" --backend "${PARAMS_BACKEND:-gpu}" >"$OUT/params-$size.log" 2>&1 \
      || { summary "params $size: FAILED"; tail -5 "$OUT/params-$size.log"; exit 1; }
    summary "params $size: written in $((SECONDS - t0)) s: $(tail -3 "$OUT/params-$size.log" | tr '\n' ' ')"
    ls -l "$PC" >>"$OUT/params-$size.log"
    [ "${CHECKED_LOAD:-1}" = 0 ] || bash "$0" "checked-load-$size"
    ;;
  checked-load-32GiB | checked-load-64GiB)
    # The newest parameters file in PARAM_CACHE, loaded checked: decode and curve check on
    # the CPU, every point's subgroup test on the GPU (params verify --backend gpu).
    size=${1#checked-load-}
    f=$(ls -t "$PC"/*.params | head -1)
    t0=$SECONDS
    "$B" params verify "$f" --backend gpu >"$OUT/params-verify-$size.log" 2>&1 \
      && summary "checked load of $f ($(stat -c %s "$f") bytes) in $((SECONDS - t0)) s: $(tail -2 "$OUT/params-verify-$size.log" | tr '\n' ' ')" \
      || summary "checked load of $f FAILED: $(tail -2 "$OUT/params-verify-$size.log")"
    ;;
  timing-32GiB | timing-64GiB)
    # TIMING ONLY (issue 24): SECTORS random C1s of the real shape through one GPU engine
    # of SLOTS slots, shape-only parameters made in memory; nothing can verify.
    size=${1#timing-}
    # DEVICE_MEMORY=24GiB: within that device-memory budget (bases streamed from the host).
    fc soak --timing-only --sector-size "$size" --sectors "${SECTORS:-3}" --slots "${SLOTS:-4}" \
      --backend gpu ${DEVICE_MEMORY:+--device-memory "$DEVICE_MEMORY"} >"$OUT/timing-$size.log" 2>&1
    summary "timing $size: $(tail -22 "$OUT/timing-$size.log")"
    ;;
  *)
    echo "usage: $0 small|soak|512MiB|32GiB|64GiB|params-32GiB|params-64GiB|checked-load-32GiB|checked-load-64GiB|timing-32GiB|timing-64GiB" >&2
    exit 2
    ;;
esac
nproc >"$OUT/machine.txt"; free -g >>"$OUT/machine.txt"; nvidia-smi -L >>"$OUT/machine.txt" 2>&1
