#!/usr/bin/env bash
# A 2^26 proof_run through Airflow on the H200, pinned vs pageable, in two device calls made
# back to back (the machine stays warm 30 s between calls; a call is at most 10 minutes):
#   carry .whl; command: bash bench/h200_2p26.sh setup     # kernels, the 2^26 key on the GPU
#   carry .whl; command: bash bench/h200_2p26.sh run       # bench.pipeline: proofflow, proofflow-pageable
#                                                          # (then bench.staging at 2^26 unless STAGING_BENCH=0)
# (.whl/ from `bash bench/gpu_wheels.sh`). Where things go on the 64 GiB disk / 128 GiB host:
# the key (38.6 GB) on disk under /root/pf, the constraint-system cache (16 GB) and the shared
# staging (PROOFFLOW_STAGING_BUDGET, 3 partitions of 8.6 GB) in /dev/shm. `setup` also asks
# for a 2^27 run, to record what the resource check says of it on this machine.
# Results in $OUT: pipeline-h200-2p26.json (+ .png), staging-h200-2p26.json, the logs.
set -uo pipefail
cd "$(dirname "$0")/.."
MODE=${1:?setup or run}
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "installing the carried wheels failed"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
export PROOFFLOW_KERNEL_DIR=/root/pf/kernels PROOFFLOW_CACHE=/dev/shm/pf-cache OMP_NUM_THREADS=4
. bench/_kernels.sh  # prebuilt cubins, if carried
export PROOFFLOW_STAGING_BUDGET=$((26 << 30)) PROOFFLOW_SHARED_STAGING=/dev/shm/pf-staging
KEYS=/root/pf/params
t0=$SECONDS

if [ "$MODE" = setup ]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
    df -h / /root /dev/shm | tee "$OUT/df.txt"
    free -g | tee -a "$OUT/df.txt"
    # 2^27 on this machine: the resource check's answer (its key alone is 77 GB)
    PROOFFLOW_HOME=/root/pf/home python3 -m proofflow.cli run --log2 27 --partitions 4 --backend gpu \
        2>&1 | tee "$OUT/log2-27.txt"
    python3 -m proofflow.cli kernels build --json > "$OUT/kernels.json" 2> "$OUT/kernels.log" &
    kernels=$!
    s0=$SECONDS
    python3 -m proofflow.prover setup --circuit mimc --log2 26 --seed 0 --backend gpu \
        --out "$KEYS/mimc-log2_26-seed0" > "$OUT/setup-2p26.log" 2>&1
    rc=$?
    tail -15 "$OUT/setup-2p26.log"
    echo "setup 2^26: $((SECONDS - s0)) s"
    wait $kernels; echo "kernels: rc $?"
    du -sh "$KEYS" /dev/shm/pf-cache
    echo "setup done at $((SECONDS - t0)) s (rc $rc)"
    exit $rc
fi

# run: both variants through a fresh Airflow each, the key shared, then the staging benchmark at 2^26
python3 -m bench.pipeline --backend gpu --log2 26 --partitions 4 --warmup 1 --depth 4 \
    --variants proofflow,proofflow-pageable --params-cache "$KEYS" --scratch /root/pf/scratch \
    --work /root/pf/pipeline --timing-db "sqlite:///$OUT/timing-2p26.db" --parallelism 8 --synth-concurrency 2 \
    --timeout 330 --out "$OUT/pipeline-h200-2p26.json" --png "$OUT/pipeline-h200-2p26.png" 2>&1 | tee "$OUT/pipeline.log"
rc=${PIPESTATUS[0]}
left=$(( 560 - (SECONDS - t0) ))
rm -rf /dev/shm/pf-staging  # the runs' idle segments: room for the benchmark's
if [ "${STAGING_BENCH:-1}" = 1 ] && [ "$left" -gt 60 ]; then  # STAGING_BENCH=0: the runs alone
    timeout -k 5 "$left" python3 -m bench.staging --log2 26 --reps 3 --out "$OUT/staging-h200-2p26.json" 2>&1 | tail -5
fi
tar czf "$OUT/airflow-logs.tgz" -C /root/pf/pipeline --exclude='*.db' . 2>/dev/null || true
echo "run done at $((SECONDS - t0)) s (rc $rc)"
exit $rc
