#!/usr/bin/env bash
# The sustained-load benchmark on the H200, in one device call (the machine has no package
# index: Airflow, Great Expectations and arkworks come as wheels in .whl/, from
# `bash bench/gpu_wheels.sh`, carried with the call):
#   carry .whl; command: bash bench/h200_stream.sh [DURATION_S] [WARMUP_S]
# 1. installs the wheels into /tmp/site; 2. makes the 2^22 and 2^24 proving keys with the GPU
# setup (the keys the runs' setup tasks then find cached); 3. runs bench.stream: one Airflow
# on SQLite, a 2^22 stream (3 proof_runs of 8 partitions in flight) then a 2^24 stream (2 of
# 4: a 2^24 partition leaves 3.5 GB in scratch until its run ends, so at most 3 runs' worth,
# 42 GB, plus the keys' 12 GB on /dev/shm; 2 syntheses a run at once, 3.5 GB each), each DURATION_S seconds
# of feeding (at most 180, fewer when the setup left less of the call's 570 s) with the first
# WARMUP_S left out; scratch and keys on /dev/shm. Results ($OUT/stream-h200.json, written
# after each size), the timeline PNG, the timing DB and Airflow's logs are in $OUT.
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
df -h /dev/shm | tail -1; free -g | head -2
KEYS=/dev/shm/pf-params
for L in 22 24; do
    python3 -m proofflow.prover setup --circuit mimc --log2 "$L" --seed 0 --backend gpu --out "$KEYS/mimc-log2_${L}-seed0"
    echo "2^$L key ready at $(since) s"
done
# what is left of the call: Airflow's start (~30 s), each stream's drain (~40 s) and the
# analysis (~20 s) come on top of the feeding
left=$(( 570 - $(since) ))
dur=$(( (left - 140) / 2 )); [ "$dur" -gt "$DURATION" ] && dur=$DURATION
SIZES=(22 24); PARTS=(8 4); INFLIGHT=(3 2)
if [ "$dur" -lt $(( WARMUP + 60 )) ]; then  # too little for two: the 2^22 stream alone
    dur=$(( left - 100 )); [ "$dur" -gt "$DURATION" ] && dur=$DURATION
    SIZES=(22); PARTS=(8); INFLIGHT=(3)
fi
echo "streaming ${SIZES[*]} for $dur s each (warm-up $WARMUP s), $left s of the call left"
# 12 GiB of pinned staging: 4 jobs of 2^24 (a/b/c and witness, 2 GiB each) with room to spare
timeout -k 5 $(( left - 10 )) python3 -m bench.stream --backend gpu --log2 "${SIZES[@]}" --partitions "${PARTS[@]}" \
    --in-flight "${INFLIGHT[@]}" --duration "$dur" --warmup-s "$WARMUP" --params-cache "$KEYS" \
    --scratch /dev/shm/pf-scratch --work /tmp/pf-stream --timing-db "sqlite:///$OUT/timing.db" --parallelism 16 \
    --timeout 120 --synth-concurrency 2 --set PROOFFLOW_STAGING_BUDGET=$(( 12 << 30 )) --label h200 \
    --out "$OUT/stream-h200.json" --png "$OUT/stream-h200.png" 2>&1 | tee "$OUT/stream.log" || true
tar czf "$OUT/airflow-logs.tgz" -C /tmp/pf-stream --exclude='*.db' . 2>/dev/null || true
echo "done at $(since) s"
