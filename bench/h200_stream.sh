#!/usr/bin/env bash
# The sustained-load benchmark on the H200, one size a device call (the machine has no package
# index: Airflow, Great Expectations and arkworks come as wheels in .whl/, from
# `bash bench/gpu_wheels.sh`, carried with the call):
#   carry .whl, proofflow.egg-info; command: [PARTS=8 INFLIGHT=4|8 DEPTH=8|16 SYNTH=2|8] [PARALLELISM=32]
#       [WARMUP_PARTS=16] [CALL_S=570] bash bench/h200_stream.sh LOG2 [DURATION_S] [WARMUP_S]
# (proofflow.egg-info is what `pip install -e .` leaves in the tree: its entry point is how
# Airflow finds proofflow's plugin, whose listener preloads the tasks' modules in the scheduler;
# also carry .kernels.tar.xz from bench/gpu_kernels.sh, if built; PROOFFLOW_CURVE_VARIANT,
# PROOFFLOW_MSM_BALANCED, _PRECOMPUTE, _OVERLAP and AIRFLOW__SCHEDULER__* set for the script
# reach the deployment)
# LOG2 22 or 24. 1. installs the wheels into /tmp/site; 2. builds the GPU kernels into the
# kernel cache while the GPU setup makes the size's proving key (kept in /dev/shm: a call
# that follows within the machine's idle time finds both there and skips them); 3. runs
# bench.stream: one Airflow, proof_runs of the size triggered for DURATION_S seconds
# (default 240) of feeding; the steady window starts at the device phase of the 17th
# partition (WARMUP_PARTS=16; empty: WARMUP_S seconds after the first trigger, default 20),
# ~30-50 s in, so it lasts over 3 minutes. A count of partitions, not seconds: the prover
# service starts when the first stage task calls it, and on a fresh machine that took 21 s
# (CuPy compiling its own kernels at first use, in warm-up), which a 20 s warm-up left in
# the window (85.1% busy on the H200, stream-h200-2p22-synth8.json; 99.8% on a fresh H100
# with the count, stream-h100-2p22-warm16.json). What the configuration is for:
# - pool `gpu` of 8 slots a device (16 at 2^22; --depth): a prove_gpu task holds its slot from Airflow's
#   start of it to its end, seconds more than the device phase, so with 4 slots the device
#   waited for the next task to reach the service (2^22: 5.5 s mean pool wait, 59% busy);
#   jobs queued in the service cost no pinned memory, only a mapped staging segment;
# - more runs in flight (4 runs of 8 partitions, 8 at 2^22): a run's partitions reach the
#   device ~10 s after its trigger, and the backlog has to cover that. 3 runs of 4 at 2^24
#   kept the device 77.8% busy once its phase was 0.85 s (stream-h200-2p24.json): a run's
#   4 syntheses, 2 at a time, took longer than its 4 device phases, and a finished run's
#   tail still counted as in flight;
# - executor parallelism 32 on 16 cores: the prove_gpu tasks only wait; up to 4 x in-flight
#   runs active: a run's tail (finalize_run, check_h2d, cleanup) ends a minute after its proofs;
# - Airflow's metadata in Postgres (pgserver's, from the wheels: the image has none): on SQLite
#   that load ended in "database is locked" errors from the API server; 4 API server workers
#   (the tasks' every state change goes through it);
# - shared staging capped at 32 GiB: it bounds the partitions synthesized ahead of the device
#   (2 GiB a partition at 2^24, 0.5 at 2^22); 2 OpenMP threads a synthesis;
# - syntheses a run at once (SYNTH; the DAG's own default is no limit): 2 at 2^24, all 8 at
#   2^22. With 2 a run at 2^22 the device sat with no partition in hand 23% of the window
#   (76.3% busy, stream-h100-2p22-synth2.json): a run's syntheses went two by two, each pair
#   waiting for the scheduler to start the next, so ~2.4 ran at once of the 16 allowed; with
#   8, 97.3% busy on the same machine (stream-h100-2p22.json).
# Two streams fit one call at 150 s of feeding each, each with its own settings, the key and
# kernels made once by the first (TAG keeps their files apart), e.g. auto copies against none:
#   PROOFFLOW_MSM_PRECOMPUTE=auto CALL_S=285 TAG=-auto bash bench/h200_stream.sh 22 150;
#   CALL_S=285 TAG=-plain bash bench/h200_stream.sh 22 150
# Results in $OUT: stream-LABEL-2pLOG2TAG.json + .png (LABEL h200, or h100 when the call got one),
# kernels.json, and run-2pLOG2TAG.tar.gz: the timing DB, this call's logs and the deployment's (the
# scheduler's, API server's, DAG processor's; the tasks' own logs stay on the machine, too
# large to bring back); one archive, as a call brings back only so many files.
set -euo pipefail
L=${1:?usage: h200_stream.sh LOG2 [DURATION_S] [WARMUP_S]}; DURATION=${2:-240}; WARMUP=${3:-20}
WARMUP_PARTS=${WARMUP_PARTS-16}
TAG=${TAG:-}  # appended to the result files' names: two streams in one call keep both
case $L in 22|24) ;; *) echo "LOG2 must be 22 or 24" >&2; exit 2 ;; esac
# the feeding's shape, overridable for a call that tries another: partitions a run, runs in
# flight, the pool's slots. A pool slot cycles through a prove_gpu task's start-up and
# wind-down (~0.5 s in its span at 2^22) and the scheduler's pick-up of the next one (~1 s)
# around its device phase: 8 slots over a ~1.8 s cycle feed ~270 phases a minute, too close
# to the ~200 a 2^22 phase of ~0.3 s asks for, so 2^22 gets 16 (each queued job holds only
# its 0.4 GiB staging segment) and 8 runs in flight (a partition reaches the device ~10-15 s
# after its run's trigger: ~40-60 partitions at that rate).
case $L in 22) DEF_INFLIGHT=8 DEF_DEPTH=16 DEF_SYNTH=8 ;; *) DEF_INFLIGHT=4 DEF_DEPTH=8 DEF_SYNTH=2 ;; esac
PARTS=${PARTS:-8}; INFLIGHT=${INFLIGHT:-$DEF_INFLIGHT}; DEPTH=${DEPTH:-$DEF_DEPTH}; SYNTH=${SYNTH:-$DEF_SYNTH}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s)
since() { echo $(( $(date +%s) - t0 )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
. bench/_bytecode.sh  # the wheels' bytecode, where the host writes none
export PROOFFLOW_SETUP_WORKERS=16 OMP_NUM_THREADS=2  # syntheses run side by side: 2 OpenMP threads each
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
case $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) in *H100*) LABEL=h100 ;; *) LABEL=h200 ;; esac
python3 -c "import airflow, cupy; print('airflow', airflow.__version__, 'cupy', cupy.__version__)"
df -h / /dev/shm | tail -2; free -g | head -2
. bench/_kernels.sh  # prebuilt cubins, if carried
python3 -m proofflow.cli kernels build --json > "$OUT/kernels.json" 2> "$OUT/kernels.log" &
kernels=$!
# GPU_TESTS (pytest node ids): run beside the key setup, finished before the stream starts
tests=
if [ -n "${GPU_TESTS:-}" ]; then
    # shellcheck disable=SC2086
    timeout -k 5 240 python3 -m pytest -m gpu -q -rfEs -p no:cacheprovider $GPU_TESTS > "$OUT/pytest.log" 2>&1 &
    tests=$!
fi
META=$(python3 - <<'EOF'
import pgserver  # runs as a user of its own when root; kept running for a call that follows
srv = pgserver.get_server("/dev/shm/pf-pg", cleanup_mode=None)
if "airflow" not in srv.psql("SELECT datname FROM pg_database;").split():
    srv.psql("CREATE DATABASE airflow;")
print(srv.get_uri("airflow").replace("postgresql://", "postgresql+psycopg2://", 1))  # async: asyncpg
EOF
)
echo "Airflow metadata: $META"
KEYS=/dev/shm/pf-params KEY=/dev/shm/pf-params/mimc-log2_${L}-seed0
if [ -f "$KEY/params.json" ]; then
    echo "2^$L key found in $KEYS"
else
    python3 -m proofflow.prover setup --circuit mimc --log2 "$L" --seed 0 --backend gpu --out "$KEY" \
        > "$OUT/setup-2p$L.log" 2>&1 || { tail -20 "$OUT/setup-2p$L.log"; exit 1; }
    echo "2^$L key ready at $(since) s"
fi
bytecode_wait
wait $kernels && echo "kernels built at $(since) s" || echo "kernels build failed (see kernels.log): the service compiles"
if [ -n "$tests" ]; then
    rc=0; wait $tests || rc=$?; echo "GPU tests (rc $rc) done at $(since) s: $(tail -1 "$OUT/pytest.log")"
fi
# what is left of the call: Airflow's start (~30 s), the drain (~40 s) and the analysis
# (~20 s) come on top of the feeding. CALL_S: the seconds this call may take (default 570, a
# full call's 600 less the transfers), less where the session's device time is short
left=$(( ${CALL_S:-570} - $(since) ))
dur=$(( left - 110 )); [ "$dur" -gt "$DURATION" ] && dur=$DURATION
warm=${WARMUP_PARTS:+the first $WARMUP_PARTS partitions on the device}
echo "streaming 2^$L for $dur s (warm-up: ${warm:-$WARMUP s}), $left s of the call left"
# the caller's MSM settings (e.g. PROOFFLOW_CURVE_VARIANT=call) and scheduler settings, for
# the deployment, which inherits no PROOFFLOW_* or AIRFLOW_* variable. The scheduler's: the
# streams at 2^22 topped out near 236 syntheses a minute, ~16-19 task starts a second, and
# each scheduler loop queues at most [scheduler] max_tis_per_query task instances (16 by
# default; 0: the executor's parallelism), so AIRFLOW__SCHEDULER__MAX_TIS_PER_QUERY=0 is the
# next thing to try where the device waits for partitions (PROOFFLOW_MSM_PRECOMPUTE=auto)
sets=()
for v in PROOFFLOW_CURVE_VARIANT PROOFFLOW_MSM_BALANCED PROOFFLOW_MSM_PRECOMPUTE PROOFFLOW_MSM_OVERLAP \
        $(compgen -v AIRFLOW__SCHEDULER__ || true); do
    if [ -n "${!v:-}" ]; then sets+=(--set "$v=${!v}"); fi
done
echo "MSM and scheduler settings: ${sets[*]:-defaults}"
timeout -k 5 $(( left - 10 )) python3 -m bench.stream --backend gpu --log2 "$L" --partitions $PARTS \
    --in-flight $INFLIGHT --duration "$dur" --warmup-s "$WARMUP" ${WARMUP_PARTS:+--warmup "$WARMUP_PARTS"} --params-cache "$KEYS" --depth "$DEPTH" \
    --scratch /dev/shm/pf-scratch --work "/tmp/pf-stream-$L" --timing-db "sqlite:///$OUT/timing-2p$L.db" \
    --metadata-db "$META" --max-active $(( 4 * INFLIGHT )) --parallelism "${PARALLELISM:-32}" --timeout 120 --synth-concurrency "$SYNTH" --set PROOFFLOW_STAGING_BUDGET=$(( 32 << 30 )) --set AIRFLOW__API__WORKERS=4 \
    ${sets[@]+"${sets[@]}"} --label $LABEL --out "$OUT/stream-$LABEL-2p$L$TAG.json" --png "$OUT/stream-$LABEL-2p$L$TAG.png" 2>&1 \
    | tee "$OUT/stream$TAG.log" || true
logs=$(cd "/tmp/pf-stream-$L" 2>/dev/null && find . -name '*.log' -not -path '*dag_id=*' | sort || true)
(cd "$OUT" && ls timing-2p$L.db kernels.log compileall.log pytest.log setup-2p$L.log stream$TAG.log 2>/dev/null) \
    > "$OUT/.files" || true
{ tar cf "$OUT/run-2p$L$TAG.tar" -C "$OUT" -T "$OUT/.files" && { [ -z "$logs" ] || tar rf "$OUT/run-2p$L$TAG.tar" \
    -C "/tmp/pf-stream-$L" $logs; } && gzip -f "$OUT/run-2p$L$TAG.tar" && (cd "$OUT" && xargs rm -f < .files); } || true
rm -f "$OUT/.files" "$OUT"/timing-2p$L.db.*
echo "done at $(since) s"
