#!/usr/bin/env bash
# The pipeline benchmark on the H200, in one device call (the machine has no package index:
# Airflow, Great Expectations and arkworks come as wheels in .whl/, carried with the call):
#   carry .whl; command: bash bench/h200_pipeline.sh [LOG2] [PARTITIONS] [DEPTH]
# (.whl/ from `bash bench/gpu_wheels.sh`). 1. installs the wheels into /tmp/site; 2. makes the 2^LOG2 proving key with the GPU setup
# into a cache every variant shares; 3. runs bench.pipeline (naive, proofflow,
# proofflow-pageable; naive first: it is the long one, and the PNG is drawn once
# naive and proofflow have run) through a real Airflow on SQLite, scratch on /dev/shm; results, the
# timeline PNG and the timing DB (written as it goes) are in $OUT.
set -euo pipefail
LOG2=${1:-22}; PARTS=${2:-16}; DEPTH=${3:-4}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
. bench/_bytecode.sh  # the wheels' bytecode, where the host writes none
export PROOFFLOW_SETUP_WORKERS=16 OMP_NUM_THREADS=2  # 16 syntheses at once: 2 OpenMP threads each
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
python3 -c "import airflow, cupy; print('airflow', airflow.__version__, 'cupy', cupy.__version__)"
KEYS=/dev/shm/pf-params
python3 -m proofflow.prover setup --circuit mimc --log2 "$LOG2" --seed 0 --backend gpu --out "$KEYS/mimc-log2_${LOG2}-seed0"
echo "key ready at $(( $(date +%s) - t0 )) s"
bytecode_wait
python3 -m bench.pipeline --backend gpu --log2 "$LOG2" --partitions "$PARTS" --depth "$DEPTH" \
    --variants naive,proofflow,proofflow-pageable --params-cache "$KEYS" --scratch /dev/shm/pf-scratch \
    --work /tmp/pf-pipeline --timing-db "sqlite:///$OUT/timing.db" --parallelism 16 --timeout 420 \
    --out "$OUT/pipeline-h200.json" --png "$OUT/pipeline-h200.png" 2>&1 | tee "$OUT/pipeline.log"
tar czf "$OUT/airflow-logs.tgz" -C /tmp/pf-pipeline --exclude='*.db' . 2>/dev/null || true
# what is left of the call: the G1 MSM and CPU-reference sections of bench.gpu
left=$(( 570 - ($(date +%s) - t0) ))
if [ "$left" -gt 60 ]; then
    timeout -k 5 "$left" python3 -m bench.gpu --only bench_msm bench_cpu_ntt --out "$OUT/gpu-h200-more.json" \
        2>&1 | tail -20 | tee "$OUT/bench-more.log" || true
fi
echo "done at $(( $(date +%s) - t0 )) s"
