#!/usr/bin/env bash
# tools/gpu_check.sh - the GPU check: build gpuscan on a CUDA machine, run the whole test suite
# with the CUDA backend, run compute-sanitizer over a run that touches every kernel, run the
# benchmarks; full logs into a folder, a short summary table printed last.
#
#   tools/gpu_check.sh [OUTDIR]        (OUTDIR default: $OUT, else ./gpu_check_out)
#
# Steps (GPU_CHECK_STEPS, comma-separated, default "build,tests,sanitize,bench"):
#   build     pip install --no-build-isolation --no-deps -v -e .            -> build.log
#             (GPUSCAN_CUDA_ARCHS as set; unset, the build compiles for the GPUs it sees)
#   (always)  nvidia-smi -L, gpuscan.backend() and device_info()          -> stdout
#   tests     python -m pytest $GPU_CHECK_TESTS with GPUSCAN_BACKEND=cuda   -> tests.log
#   sanitize  compute-sanitizer --tool memcheck, racecheck, synccheck over
#             tools/sanitize_run.py (racecheck with --reduced)             -> sanitizer.log
#   bench     benchmarks/<script>.py --out OUTDIR $BENCH_ARGS for each of
#             $BENCH_SCRIPTS                                               -> bench.log and the
#             result files <gpu>-<date>-<tag>.txt (+ .json) for benchmarks/results/
#   summary.txt holds the final table.
#
# A failed step does not stop the later ones (a failing test still lets the sanitizers and the
# benchmarks run), but the exit status is 1 if any step failed or could not run.  A machine
# whose commands are cut off after some minutes runs the steps in separate calls
# (GPU_CHECK_STEPS=build,tests, then sanitize, then bench) and sets GPU_CHECK_DEADLINE a little
# under its limit, so that the summary is still printed.
#
# Environment:
#   GPU_CHECK_STEPS        the steps to run (default build,tests,sanitize,bench)
#   GPU_CHECK_TIMEOUT      seconds one step's command may take (default 3600: a hang must not
#                          hold the machine; each sanitizer and each benchmark is one command)
#   GPU_CHECK_DEADLINE     seconds the whole script may take (default: none); each command then
#                          gets at most what is left of it, less 20 s for the summary
#   GPU_CHECK_TESTS        the test files or folders (default "tests": the whole suite)
#   GPU_CHECK_TEST_TIMEOUT per-test timeout of pytest-timeout, where it is installed (default 600)
#   PYTEST_ARGS            extra pytest arguments (e.g. "-x" or "-m 'not slow'")
#   SANITIZE_ARGS          arguments of sanitize_run.py under memcheck and synccheck (e.g.
#                          "--only apps,split" for the cases of the kernels a change touched)
#   SANITIZE_RACE_ARGS     ... under racecheck (default --reduced)
#   BENCH_SCRIPTS          benchmarks to run (default "bench_cub bench_scan bench_segreduce
#                          bench_split bench_hist bench_apps bench_pipeline")
#   BENCH_ARGS             arguments of every benchmark (e.g. "--min-log2 16 --step 4")
#   PYTHON                 interpreter (default python3)
set -u -o pipefail

T0=$(date +%s)
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2

OUTDIR="${1:-${OUT:-$ROOT/gpu_check_out}}"
mkdir -p "$OUTDIR" || exit 2
OUTDIR="$(cd "$OUTDIR" && pwd)"

PY="${PYTHON:-python3}"
STEPS=",${GPU_CHECK_STEPS:-build,tests,sanitize,bench},"
TIMEOUT="${GPU_CHECK_TIMEOUT:-3600}"
DEADLINE="${GPU_CHECK_DEADLINE:-}"
BENCHES="${BENCH_SCRIPTS:-bench_cub bench_scan bench_segreduce bench_split bench_hist bench_apps bench_pipeline}"
export PYTHONUNBUFFERED=1              # Python's output interleaves with ours, in order
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"   # the in-place build, even if pip's link is gone

SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

FAILED=0
SUMMARY=()                             # "step|status|detail" lines for the final table

log() { printf '[%s +%4ds] %s\n' "$(date +%H:%M:%S)" "$(( $(date +%s) - T0 ))" "$*"; }
want() { [[ "$STEPS" == *",$1,"* ]]; }
add() { SUMMARY+=("$1|$2|$3"); }
fail() { FAILED=1; add "$1" "FAIL" "$2"; }

# Seconds the next command may run: GPU_CHECK_TIMEOUT, or less when GPU_CHECK_DEADLINE leaves
# less (20 s kept for the summary).  Prints 0 when too little is left to start it.
budget() {
    local left
    if [[ -z "$DEADLINE" ]]; then echo "$TIMEOUT"; return; fi
    left=$(( DEADLINE - ($(date +%s) - T0) - 20 ))
    if (( left < 30 )); then echo 0; elif (( left < TIMEOUT )); then echo "$left"; else echo "$TIMEOUT"; fi
}

# run_limited SECONDS CMD...: CMD under `timeout` where the machine has it.
run_limited() {
    local secs=$1; shift
    if command -v timeout >/dev/null 2>&1; then
        timeout --signal=TERM --kill-after=10 "$secs" "$@"
    else
        "$@"
    fi
}

timed_out() { [[ $1 -eq 124 || $1 -eq 137 ]]; }

log "gpu_check in $ROOT, output to $OUTDIR, steps ${STEPS:1:-1}, ${TIMEOUT}s a command${DEADLINE:+, deadline ${DEADLINE}s}"

# ---- build --------------------------------------------------------------------------------
if want build; then
    secs=$(budget)
    log "build: pip install -e . (GPUSCAN_CUDA_ARCHS=${GPUSCAN_CUDA_ARCHS:-unset: the visible GPUs}," \
        "limit ${secs}s) -> build.log"
    if (( secs == 0 )); then
        fail build "not run: deadline"
    else
        run_limited "$secs" "$PY" -m pip install --no-build-isolation --no-deps -v -e . \
            >"$OUTDIR/build.log" 2>&1
        rc=$?
        if (( rc == 0 )); then
            if grep -q "building the CPU backend only" "$OUTDIR/build.log"; then
                fail build "built WITHOUT CUDA kernels (see build.log)"
            else
                add build ok "$(grep -m1 -o 'built gpuscan._gpuscan with .*' "$OUTDIR/build.log" || echo 'pip install -e . ok')"
            fi
        else
            timed_out $rc && why="timed out after ${secs}s" || why="exit $rc"
            fail build "$why (tail of build.log above)"
            log "build FAILED ($why); tail of build.log:"
            tail -n 40 "$OUTDIR/build.log"
        fi
    fi
fi

# ---- device and backend -------------------------------------------------------------------
log "device:"
nvidia-smi -L 2>&1 || echo "(nvidia-smi failed)"
info=$(GPUSCAN_BACKEND=cuda "$PY" - <<'EOF' 2>&1
import os, sys
try:
    import gpuscan
    print("gpuscan", getattr(gpuscan, "__version__", "?"), "from", os.path.dirname(gpuscan.__file__))
    print("device_info()", gpuscan.device_info())
    print("backend()", gpuscan.backend())
except Exception as exc:
    print(f"gpuscan not usable with GPUSCAN_BACKEND=cuda: {type(exc).__name__}: {exc}")
    sys.exit(1)
EOF
)
rc=$?
echo "$info"
if (( rc == 0 )); then
    add backend ok "$(echo "$info" | tail -n 1)"
else
    fail backend "$(echo "$info" | tail -n 1 | cut -c1-150)"
fi

# ---- tests --------------------------------------------------------------------------------
if want tests; then
    secs=$(budget)
    log "tests: pytest ${GPU_CHECK_TESTS:-tests} with GPUSCAN_BACKEND=cuda (limit ${secs}s) -> tests.log"
    if (( secs == 0 )); then
        fail tests "not run: deadline"
    else
        targs=(-q -rfEs -p no:cacheprovider)
        if "$PY" -c "import pytest_timeout" 2>/dev/null; then
            targs+=("--timeout=${GPU_CHECK_TEST_TIMEOUT:-600}")
        fi
        # shellcheck disable=SC2206  # PYTEST_ARGS is split on purpose
        extra=(${PYTEST_ARGS:-})
        # shellcheck disable=SC2206  # GPU_CHECK_TESTS is split on purpose
        paths=(${GPU_CHECK_TESTS:-tests})
        GPUSCAN_BACKEND=cuda run_limited "$secs" "$PY" -m pytest "${paths[@]}" "${targs[@]}" "${extra[@]}" \
            2>&1 | tee "$OUTDIR/tests.log" | tail -n 25
        rc=$?
        counts=$(tail -n 5 "$OUTDIR/tests.log" | grep -E '[0-9]+ (passed|failed|error)' | tail -n 1 \
                 | grep -oE '[0-9]+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected)' \
                 | paste -sd, - | sed 's/,/, /g')
        [[ -n "$counts" ]] || counts="no pytest summary line"
        if (( rc == 0 )); then
            add tests ok "$counts"
        else
            timed_out $rc && counts="timed out after ${secs}s; $counts"
            fail tests "$counts (exit $rc)"
        fi
    fi
fi

# ---- compute-sanitizer --------------------------------------------------------------------
if want sanitize; then
    SAN="$(command -v compute-sanitizer || true)"
    for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
        [[ -z "$SAN" && -x "$c" ]] && SAN="$c"
    done
    : >"$OUTDIR/sanitizer.log"
    if [[ -z "$SAN" ]]; then
        fail sanitize "compute-sanitizer not found"
    else
        for tool in memcheck racecheck synccheck; do
            if [[ $tool == racecheck ]]; then sargs="${SANITIZE_RACE_ARGS:---reduced}"; else sargs="${SANITIZE_ARGS:-}"; fi
            secs=$(budget)
            log "sanitize: compute-sanitizer --tool $tool tools/sanitize_run.py $sargs (limit ${secs}s) -> sanitizer.log"
            if (( secs == 0 )); then
                fail "$tool" "not run: deadline"
                continue
            fi
            one="$SCRATCH/$tool.log"
            # shellcheck disable=SC2086  # sargs is split on purpose
            GPUSCAN_BACKEND=cuda run_limited "$secs" "$SAN" --tool "$tool" --error-exitcode=1 \
                --print-limit 50 "$PY" tools/sanitize_run.py $sargs >"$one" 2>&1
            rc=$?
            { echo "==================== compute-sanitizer --tool $tool (exit $rc) ===================="
              cat "$one"; echo; } >>"$OUTDIR/sanitizer.log"
            tail -n 4 "$one"
            # memcheck and synccheck end on "ERROR SUMMARY: N errors", racecheck on
            # "RACECHECK SUMMARY: N hazards displayed (N errors, N warnings)".
            errs=$(grep -oE 'ERROR SUMMARY: [0-9]+ errors?|RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ errors?, [0-9]+ warnings?\)' "$one" | tail -n 1)
            cases=$(grep -E '^sanitize_run: (all|[0-9]+ of)' "$one" | tail -n 1 | sed 's/^sanitize_run: //')
            if (( rc == 0 )) && [[ -n "$errs" ]]; then
                add "$tool" ok "$errs; $cases"
            elif timed_out $rc; then
                fail "$tool" "timed out after ${secs}s; ${errs:-no ERROR SUMMARY}"
            elif [[ -z "$errs" ]]; then
                why=$(grep -m1 -iE 'not supported|error' "$one" | cut -c1-100)
                fail "$tool" "did not run to its summary (exit $rc): ${why:-see sanitizer.log}"
            else
                fail "$tool" "$errs; ${cases:-sanitize_run exit $rc}"
            fi
        done
    fi
fi

# ---- benchmarks ---------------------------------------------------------------------------
if want bench; then
    : >"$OUTDIR/bench.log"
    for script in $BENCHES; do
        secs=$(budget)
        log "bench: benchmarks/$script.py --out $OUTDIR ${BENCH_ARGS:-} (limit ${secs}s) -> bench.log"
        if (( secs == 0 )); then
            fail "$script" "not run: deadline"
            continue
        fi
        # shellcheck disable=SC2086  # BENCH_ARGS is split on purpose
        GPUSCAN_BACKEND=cuda run_limited "$secs" "$PY" "benchmarks/$script.py" --out "$OUTDIR" \
            ${BENCH_ARGS:-} 2>&1 | tee "$SCRATCH/$script.log"
        rc=$?
        cat "$SCRATCH/$script.log" >>"$OUTDIR/bench.log"
        result=$(grep -oE '^result files: .*\.txt' "$SCRATCH/$script.log" | sed 's/^result files: //')
        if (( rc == 0 )); then
            add "$script" ok "${result:-no result file}"
        else
            timed_out $rc && why="timed out after ${secs}s" || why="exit $rc"
            fail "$script" "$why; ${result:-no result file}"
        fi
    done
fi

# ---- summary (last) -----------------------------------------------------------------------
{
    echo
    echo "=================== gpu_check summary ($(( $(date +%s) - T0 )) s) ==================="
    nvidia-smi -L 2>/dev/null | head -n 1
    for line in "${SUMMARY[@]}"; do
        IFS='|' read -r step status detail <<<"$line"
        printf '%-16s %-5s %s\n' "$step" "$status" "$detail"
    done
    if want bench; then
        for script in $BENCHES; do
            [[ -f "$SCRATCH/$script.log" ]] || continue
            echo
            sed -n '/^=== gpuscan bench summary/,$p' "$SCRATCH/$script.log"
        done
    fi
    echo
    if (( FAILED )); then echo "gpu_check: FAILED (logs in $OUTDIR)"; else echo "gpu_check: all ok (logs in $OUTDIR)"; fi
} | tee "$OUTDIR/summary.txt"
exit $FAILED
