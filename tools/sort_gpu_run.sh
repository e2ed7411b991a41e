#!/usr/bin/env bash
# tools/sort_gpu_run.sh - the CUDA sort's device check and timings in one job (issue 45):
#   BIN=dir OUT=dir tools/sort_gpu_run.sh [steps]   steps: any of check bench cub peers san
#                                                  (default all, in that order)
# BIN holds sort_check (tools/sort_check.cu with kernels/dispatch/sort.cu, built as its header
# says) and cub_driver (benchmarks/cub_driver.cu); sort_peers.py is benchmarks/sort_peers.py.
# Writes OUT/check.txt (every case against the model), OUT/bench.txt (gpuscan's sort, CUB's
# sort cases and CuPy/PyTorch, one job, the driver's line format) and OUT/san.txt
# (compute-sanitizer memcheck, racecheck, synccheck over sort_check --quick).
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
STEPS=${*:-check bench cub peers san}
SIZES=${SIZES:-16 20 24 28}
{ nvidia-smi -L; date -u; } > "$OUT/env.txt" 2>&1
for step in $STEPS; do
  case $step in
  check) { timeout 120 "$BIN/sort_check"; echo "rc=$?"; } > "$OUT/check.txt" 2>&1 ;;
  bench) { timeout 150 "$BIN/sort_check" --bench $SIZES; echo "rc=$?"; } >> "$OUT/bench.txt" 2>&1 ;;
  cub) { timeout 200 "$BIN/cub_driver" --only=sortkeys,sortpairs,segsort,segradix $SIZES; echo "rc=$?"; } >> "$OUT/bench.txt" 2>&1 ;;
  peers) { timeout 200 python3 "$HERE/benchmarks/sort_peers.py" $SIZES; echo "rc=$?"; } >> "$OUT/bench.txt" 2>&1 ;;
  san)
    for tool in memcheck racecheck synccheck; do
      echo "== $tool"
      timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 "$BIN/sort_check" --quick 2>&1 | tail -15
      echo "rc=${PIPESTATUS[0]}"
    done > "$OUT/san.txt" 2>&1 ;;
  esac
done
tail -n 3 "$OUT"/*.txt
