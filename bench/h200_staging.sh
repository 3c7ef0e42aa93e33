#!/usr/bin/env bash
# Zero-copy staging and shipped kernels on the H200, in one device call (~7 minutes):
#   carry .whl; command: bash bench/h200_staging.sh      (.whl/ from `bash bench/gpu_wheels.sh`)
#   1. proofflow kernels build: every module compiled for the device into an empty kernel cache
#      (what a fresh worker paid in service_start before the cache; the image build pays it now)
#   2. service_start with that cache: a fresh prover service up and warm, measured 3 times
#   3. the GPU tests of staging, the service and the kernel cache (+ the backend's)
#   4. python -m bench.staging: H2D from the registered shared segment vs pageable vs CuPy
#      pinned at 2^24 and 2^26 -> $OUT/staging-h200.json
# Writes $OUT/kernels-h200.json (steps 1-2). Each step has a time budget and runs whatever
# the one before did; the script fails unless every step passed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "installing the carried wheels failed"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
export PROOFFLOW_HOME=/tmp/pf-home PROOFFLOW_KERNEL_DIR=/tmp/pf-kernels
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"

declare -A RC SECS
step() {  # step NAME BUDGET LOG COMMAND...
    local name=$1 budget=$2 log=$3; shift 3
    echo "=== $name (budget ${budget} s)"
    local t0=$SECONDS
    timeout -k 10 "$budget" "$@" 2>&1 | tee "$OUT/$log"
    RC[$name]=${PIPESTATUS[0]}; SECS[$name]=$((SECONDS - t0))
}

step kernels 240 kernels.log python3 -m proofflow.cli kernels build --json
step service 90 service.log python3 - "$OUT/kernels-h200.json" "${SECS[kernels]}" <<'EOF'
import json, sys, time
from proofflow.prover import device
from proofflow.prover.device import cache
from proofflow.prover.service.client import ServiceClient
starts = []
for _ in range(3):  # a fresh service each time: CUDA context, kernels from the cache, warm-up
    c = ServiceClient("gpu", 0, idle_s=30)
    starts.append(round(c.ensure_running(), 2))
    c.stop()
    time.sleep(1.5)
rows = cache.entries()
out = {"device": device.name(), "nvrtc": list(cache.nvrtc_version()), "kernels_build_s": int(sys.argv[2]),
       "modules": [{k: r[k] for k in ("module", "arch", "bytes") if k in r} for r in rows],
       "service_start_s": starts, "service_start_s_median": sorted(starts)[1]}
json.dump(out, open(sys.argv[1], "w"), indent=2)
print(json.dumps(out, indent=2))
EOF
step tests 240 pytest.log python3 -m pytest -m gpu -q -rfEs -p no:cacheprovider --durations=8 \
    tests/device/test_gpu_service.py tests/device/test_gpu_kernel_cache.py tests/device/test_gpu_backend.py
step staging 200 staging.log python3 -m bench.staging --log2 24 26 --out "$OUT/staging-h200.json"

echo "=== summary"
for s in kernels service tests staging; do printf '%-8s rc %4s %6s s\n' "$s" "${RC[$s]:-?}" "${SECS[$s]:-?}"; done
grep -E "passed|failed|error" "$OUT/pytest.log" | tail -1
for s in kernels service tests staging; do [ "${RC[$s]:-1}" = 0 ] || exit 1; done
