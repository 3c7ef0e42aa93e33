#!/usr/bin/env bash
# The sustained-load benchmark on the H200, in one device call (the machine has no package
# index: Airflow, Great Expectations and arkworks come as wheels in .whl/, from
# `bash bench/gpu_wheels.sh`, carried with the call):
#   carry .whl; command: bash bench/h200_stream.sh [DURATION_S] [WARMUP_S]
# 1. installs the wheels into /tmp/site; 2. builds the GPU kernels into the kernel cache while
# the GPU setup makes the 2^22 and 2^24 proving keys (the keys the runs' setup tasks then find
# cached, in /dev/shm; the kernels and constraint systems in the default cache, where the
# deployment's processes look); 3. runs bench.stream: one Airflow on SQLite, a 2^22 stream
# (3 proof_runs' worth of 8 partitions in flight) then a 2^24 stream (2 of 4), each DURATION_S
# seconds of feeding (at most 180, fewer when the set-up left less of the call's 570 s) with
# the first WARMUP_S left out. The shared staging (synthesis writes each partition's a/b/c and
# witness there once: 2 GiB a partition at 2^24, 0.5 at 2^22) is capped at 16 GiB, which
# bounds the partitions synthesized ahead of the device; 2 syntheses a run at once. Results
# ($OUT/stream-h200.json, written after each size), the timeline PNG, the timing DB and
# Airflow's logs are in $OUT.
set -euo pipefail
DURATION=${1:-180}; WARMUP=${2:-30}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s)
since() { echo $(( $(date +%s) - t0 )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
export PROOFFLOW_SETUP_WORKERS=16 OMP_NUM_THREADS=2  # syntheses run side by side: 2 OpenMP threads each
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
python3 -c "import airflow, cupy; print('airflow', airflow.__version__, 'cupy', cupy.__version__)"
df -h / /dev/shm | tail -2; free -g | head -2
python3 -m proofflow.cli kernels build --json > "$OUT/kernels.json" 2> "$OUT/kernels.log" &
kernels=$!
# GPU_TESTS (pytest node ids): run beside the key setup, finished before the streams start
tests=
if [ -n "${GPU_TESTS:-}" ]; then
    # shellcheck disable=SC2086
    timeout -k 5 240 python3 -m pytest -m gpu -q -rfEs -p no:cacheprovider $GPU_TESTS > "$OUT/pytest.log" 2>&1 &
    tests=$!
fi
KEYS=/dev/shm/pf-params
for L in 22 24; do
    python3 -m proofflow.prover setup --circuit mimc --log2 "$L" --seed 0 --backend gpu \
        --out "$KEYS/mimc-log2_${L}-seed0" > "$OUT/setup-2p$L.log" 2>&1 || { tail -20 "$OUT/setup-2p$L.log"; exit 1; }
    echo "2^$L key ready at $(since) s"
done
wait $kernels && echo "kernels built at $(since) s" || echo "kernels build failed (see kernels.log): the service compiles"
if [ -n "$tests" ]; then
    wait $tests; echo "GPU tests (rc $?) done at $(since) s: $(tail -1 "$OUT/pytest.log")"
fi
# what is left of the call: Airflow's start (~30 s), each stream's drain (~40 s) and the
# analysis (~20 s) come on top of the feeding
left=$(( 570 - $(since) ))
dur=$(( (left - 140) / 2 )); [ "$dur" -gt "$DURATION" ] && dur=$DURATION
SIZES=(22 24); PARTS=(8 4); INFLIGHT=(3 2)
if [ "$dur" -lt $(( WARMUP + 60 )) ]; then  # too little for two: the 2^22 stream alone
    dur=$(( left - 100 )); [ "$dur" -gt "$DURATION" ] && dur=$DURATION
    SIZES=(22); PARTS=(8); INFLIGHT=(3)
fi
echo "streaming 2^${SIZES[*]} for $dur s each (warm-up $WARMUP s), $left s of the call left"
timeout -k 5 $(( left - 10 )) python3 -m bench.stream --backend gpu --log2 "${SIZES[@]}" --partitions "${PARTS[@]}" \
    --in-flight "${INFLIGHT[@]}" --duration "$dur" --warmup-s "$WARMUP" --params-cache "$KEYS" \
    --scratch /dev/shm/pf-scratch --work /tmp/pf-stream --timing-db "sqlite:///$OUT/timing.db" --parallelism 16 \
    --timeout 120 --synth-concurrency 2 --set PROOFFLOW_STAGING_BUDGET=$(( 16 << 30 )) --label h200 \
    --out "$OUT/stream-h200.json" --png "$OUT/stream-h200.png" 2>&1 | tee "$OUT/stream.log" || true
tar czf "$OUT/airflow-logs.tgz" -C /tmp/pf-stream --exclude='*.db' . 2>/dev/null || true
echo "done at $(since) s"
