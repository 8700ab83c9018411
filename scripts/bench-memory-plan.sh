#!/usr/bin/env bash
# The memory plan's measurements on a many-core host, alternating baseline and candidate in one
# sitting: soaks slab/fresh/slab/fresh at one size, then the allocation-strategy bench.
#   [ROUNDS=2] scripts/bench-memory-plan.sh BIN OUT_DIR SIZE SECTORS PARTITIONS [ALLOC_MIB]
# e.g. scripts/bench-memory-plan.sh target/release/arenaprove /tmp/out 1048576 5 4 1024
set -u
bin=$1 out=$2 size=$3 sectors=$4 parts=$5 alloc_mib=${6:-}
mkdir -p "$out"
export ARENAPROVE_CACHE=${ARENAPROVE_CACHE:-$PWD/.cache/arenaprove}
nproc > "$out/nproc.txt"; free -g > "$out/free.txt"
cat /sys/kernel/mm/transparent_hugepage/enabled > "$out/thp.txt" 2>/dev/null
# Parameters first (generated once, cached), so no soak pays for them.
"$bin" soak --sectors 1 --partitions 1 --constraints "$size" --json > "$out/warm_$size.json" 2>&1 || true
for round in $(seq 1 "${ROUNDS:-2}"); do
  for mode in slab fresh; do
    /usr/bin/time -v "$bin" soak --sectors "$sectors" --partitions "$parts" --constraints "$size" \
      --alloc "$mode" --json > "$out/soak_${size}_${mode}_$round.json" 2> "$out/soak_${size}_${mode}_$round.err"
    echo "$mode $round rc=$?" >> "$out/progress.txt"
  done
done
if [ -n "$alloc_mib" ]; then
  "$bin" bench-alloc --size-mib "$alloc_mib" --cycles 5 > "$out/bench_alloc_$alloc_mib.txt" 2>&1
fi
