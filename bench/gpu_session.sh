#!/usr/bin/env bash
# One GPU session on the H200, in one call of about 8 minutes (under the 10-minute limit):
#   1. pytest -m gpu -q: every GPU test (the operator ones too when their packages are there)
#   2. python3 -m bench.gpu: $OUT/gpu-h200.json (commit it as bench/results/gpu-h200.json)
#   3. Nsight Compute on the G1 msm_accumulate kernel at 2^22: a text report in $OUT
# then a summary table. TESTS (pytest ids) and BENCH_ONLY (bench.gpu sections) narrow it; NCU_ARGS
# (e.g. "--variant call --balanced") picks the profiled MSM's kernels; STEPS (default "tests bench
# ncu") picks the steps, e.g. STEPS=bench BUDGET_BENCH=540 for a second call of benchmark sections
# alone. Each step has a time budget (seconds, below; 550 in all) and runs whether or not the one
# before it passed; the summary gives each step's exit status (124: out of time) and the script
# fails unless the tests and the benchmark that ran passed.
#
# The GPU machine has python3 3.12 with cupy-cuda13x, numpy and pytest, no package index,
# and no py-arkworks-bls12381. Bring it as wheels in .whl/ (git-ignored): `bash bench/gpu_wheels.sh`
# fetches it with Airflow, SQLAlchemy and Great Expectations for the operator tests;
# run with .whl carried:   device run: command "bash bench/gpu_session.sh", carry [".whl", ".kernels.tar.xz"]
# (.kernels.tar.xz: the cubins of every variant, from `bash bench/gpu_kernels.sh`; optional)
# This script installs them into /tmp/site; the operator GPU tests (tests/timing/test_calibrate.py,
# tests/device/test_check_h2d_gpu.py) run only when those packages import.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
BUDGET_TESTS=${BUDGET_TESTS:-280}
BUDGET_BENCH=${BUDGET_BENCH:-220}
BUDGET_NCU=${BUDGET_NCU:-50}
export PYTHONUNBUFFERED=1

if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || { echo "installing the carried wheels failed"; exit 1; }
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
python3 -c "import py_arkworks_bls12381, cupy" || { echo "py-arkworks-bls12381 or cupy missing: see this script's header"; exit 1; }
. bench/_kernels.sh  # cubins compiled ahead, when carried: no NVRTC compile in the tests' budget
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader | tee "$OUT/device.txt"

declare -A RC SECS
step() {  # step NAME BUDGET LOG COMMAND...: run COMMAND under a time budget, log to $OUT/LOG
    local name=$1 budget=$2 log=$3
    shift 3
    echo "=== $name (budget ${budget} s)"
    local t0=$SECONDS
    timeout -k 10 "$budget" "$@" 2>&1 | tee "$OUT/$log"
    RC[$name]=${PIPESTATUS[0]}
    SECS[$name]=$((SECONDS - t0))
}

TESTS=${TESTS:-"tests/device/test_gpu_backend.py tests/device/test_gpu_g2.py tests/device/test_gpu_sparse.py
    tests/device/test_gpu_msm_precompute.py tests/device/test_gpu_msm_affine.py tests/device/test_gpu_overlap.py
    tests/device/test_gpu_wide.py tests/device/test_gpu_msm_balanced.py tests/device/test_gpu_density.py
    tests/device/test_kernel_twin.py
    tests/device/test_affine_twin.py
    tests/device/test_gpu_kernel_cache.py::test_after_warm_up_a_first_proof_compiles_nothing"}
if python3 -c "import sqlalchemy, alembic, great_expectations, airflow.sdk" 2>/dev/null; then
    TESTS="$TESTS tests/timing/test_calibrate.py tests/device/test_check_h2d_gpu.py tests/device/test_gpu_service.py"
else
    echo "note: airflow/sqlalchemy/alembic/great-expectations not importable: the operator GPU tests are left out"
fi
STEPS=" ${STEPS:-tests bench ncu} "
# all of them, not -x: one call should tell every failure
# shellcheck disable=SC2086
[[ $STEPS == *" tests "* ]] && step tests "$BUDGET_TESTS" pytest.log \
    python3 -m pytest -m gpu -q -rfEs --durations=12 -p no:cacheprovider $TESTS

# results straight into $OUT (written after each section, so a cut-short run keeps what it did)
# BENCH_ONLY="SECTION ...": those sections alone (bench.gpu --only)
# shellcheck disable=SC2086
[[ $STEPS == *" bench "* ]] && step bench "$BUDGET_BENCH" bench.log \
    python3 -m bench.gpu --out "$OUT/gpu-h200.json" ${BENCH_ONLY:+--only $BENCH_ONLY}
[ "${RC[bench]:-}" = 0 ] && cp "$OUT/gpu-h200.json" bench/results/gpu-h200.json

[[ $STEPS == *" ncu "* ]] && step ncu "$BUDGET_NCU" ncu-msm-accumulate-g1-2p22.txt \
    ncu --clock-control none --kernel-name regex:msm_accumulate --launch-count 1 \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats \
        --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats \
        python3 -m bench.msm_phases --group g1 --log2 22 --c 16 ${NCU_ARGS:-}

echo
echo "=== summary"
printf '%-8s %6s %8s\n' step rc seconds
for s in tests bench ncu; do printf '%-8s %6s %8s\n' "$s" "${RC[$s]:--}" "${SECS[$s]:--}"; done
grep -E "passed|failed|error" "$OUT/pytest.log" 2>/dev/null | tail -1
[ -f "$OUT/gpu-h200.json" ] || echo "no bench results"
[ -f "$OUT/gpu-h200.json" ] && python3 - "$OUT/gpu-h200.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{'sections_done':<28} {json.dumps(r.get('sections_done'))}")
for key in ("ntt_ms", "h_ms", "msm_g1_ms", "msm_g2_ms", "cpu_msm_g2_ms", "fixed_base_points_per_s",
            "cpu_fixed_base_points_per_s", "setup_s", "cpu_setup_s", "h2d_pinned_gbps", "h2d_pageable_gbps"):
    print(f"{key:<28} {json.dumps(r.get(key))}")
for key in sorted(k for k in r if k.endswith("_skipped")):
    print(f"{key:<28} {json.dumps(r[key])}")
EOF
grep -E "Duration|Registers Per Thread|Achieved Occupancy|Compute \(SM\) Throughput|Executed Ipc Active|Issue Slots Busy" \
    "$OUT/ncu-msm-accumulate-g1-2p22.txt" 2>/dev/null | sed 's/^ */ncu: /'
for s in tests bench; do  # a step that ran must have passed
    [[ $STEPS != *" $s "* ]] || [ "${RC[$s]:-1}" = 0 ] || exit 1
done
