#!/usr/bin/env bash
# The two-GPU scaling benchmark on nvidia-h200-x2, in one device call (wheels in .whl/ from
# `bash bench/gpu_wheels.sh`, carried with the call):
#   kind nvidia-h200-x2; carry .whl; command: bash bench/h200x2_pipeline.sh [LOG2] [PARTITIONS] [DEPTH]
# 1. installs the wheels into /tmp/site; 2. makes the 2^LOG2 proving key with the GPU setup;
# 3. runs bench.scaling: the same proof_run on GPU 0 alone, then on GPUs 0 and 1 (pool gpu at
# 2 x DEPTH slots, one prover service pinned to each GPU), through a real Airflow on SQLite.
# Results ($OUT/pipeline-h200-x2.json: scaling, per_gpu_busy, proofs_per_minute), the
# timeline PNG and the timing DB are in $OUT.
set -euo pipefail
LOG2=${1:-22}; PARTS=${2:-32}; DEPTH=${3:-4}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s)
# NVLink multicast stays off on the shared host (KINDS.md); nothing here uses it
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
. bench/_bytecode.sh  # the wheels' bytecode, where the host writes none
export PROOFFLOW_SETUP_WORKERS=32 OMP_NUM_THREADS=2  # the syntheses of 32 partitions at once
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
python3 -c "import airflow, cupy; print('airflow', airflow.__version__, 'cupy', cupy.__version__, 'GPUs', cupy.cuda.runtime.getDeviceCount())"
KEYS=/dev/shm/pf-params
python3 -m proofflow.prover setup --circuit mimc --log2 "$LOG2" --seed 0 --backend gpu --out "$KEYS/mimc-log2_${LOG2}-seed0"
echo "key ready at $(( $(date +%s) - t0 )) s"
bytecode_wait
python3 -m bench.scaling --backend gpu --devices 0,1 --log2 "$LOG2" --partitions "$PARTS" --depth "$DEPTH" \
    --params-cache "$KEYS" --scratch /dev/shm/pf-scratch --work /tmp/pf-scaling --timing-db "sqlite:///$OUT/timing.db" \
    --parallelism 32 --timeout 240 --out "$OUT/pipeline-h200-x2.json" --png "$OUT/pipeline-h200-x2.png" \
    2>&1 | tee "$OUT/scaling.log"
tar czf "$OUT/airflow-logs.tgz" -C /tmp/pf-scaling --exclude='*.db' . 2>/dev/null || true
echo "done at $(( $(date +%s) - t0 )) s"
