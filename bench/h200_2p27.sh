#!/usr/bin/env bash
# Issue #20 item 5 on the H200: a 2^27 partition of each family, mimc (dense) and bits
# (bit-heavy), proved with its key resident on the device, each phase reported (bench.partition;
# targets: a median device phase <= 7 s for mimc, <= 2 s for bits). One key at a time, in three
# device calls made back to back (the machine stays warm 30 s between calls, and /root and
# /dev/shm with it); each call runs one or more steps (MODE CIRCUIT pairs), and a call being at
# most 600 s, its steps stop their work at 570 s from its start. .whl/ carried
# (bash bench/gpu_wheels.sh). Measured on the H200 on 2026-12-05 (bench/results/h200-2026-12-05d):
#   1. bash bench/h200_2p27.sh cs bits setup bits                kernels, cs 53 s, setup 263 s
#   2. bash bench/h200_2p27.sh run bits clean bits cs mimc       1 + 5 proofs 72 s, clean 9 s, cs 99 s
#   3. bash bench/h200_2p27.sh setup mimc run mimc               setup 304 s, 1 + 3 proofs 76 s
# Neither step is resumable: a call cut at 570 s is lost. Before step 3 /dev/shm must be free
# of other work's files (a stream's staging segments, say): setup's check wants 100 GiB of
# MemAvailable.
# Results in $OUT: partition-h200-<circuit>-2p27.json and the logs.
#
# Memory at 2^27 (n = 2^27 points; proofflow/resources.py checks each step before it starts:
# tests/prover/test_resources.py describes this machine):
# * disk (64 GiB, 68.4 GB free when the 2^26 run looked): the constraint system's cache, 30.9 GB
#   for mimc, 24.9 GB for bits (3.6 / 2.9 GiB at 2^24, x 8), removed by `clean`. The key
#   (77.3 GB) cannot go there: it goes to /dev/shm.
# * host (128 GiB; /dev/shm is a 128 GiB tmpfs, its files are host memory): `cs` peaks at
#   384 bytes a point, 48 GiB (the build; measured 372-376 for mimc, 297-303 for bits). `setup`
#   peaks at 320 bytes, 40 GiB (the QAP at tau) before any table is written, then holds 224
#   (28 GiB) while the tables fill /dev/shm: 28 + 72 = 100 GiB at the end, the most of any
#   step (setup's own check refuses it below 100 GiB of MemAvailable: `cs` prints it). `run`:
#   the key's 72 GiB in /dev/shm, a/b/c staged page-locked (12 GiB), the witness (4 GiB) and
#   synthesis's temporaries (up to ~10 bytes a point): ~90 GiB (the check counts 48 bytes a
#   point for synthesis: 22 GiB beside the key). The key's tables go to the device straight
#   from their mapping, with no page-locked copy.
# * device (139.8 GiB): the key's tables 72.0 GiB (a, b_g1, h, l: 12 GiB each; b_g2: 24),
#   the NTT tables 16 GiB (128 bytes a point), a proof's a/b/c, witness and H 20 GiB, then the
#   larger of H's coset evaluations (12 GiB) and the costliest MSM's scratch (B_G2 over a dense
#   witness: 128.5 bytes a point, and 32 for its scalars gathered at the rows its table kept,
#   20.1 GiB): 128.1 GiB, 11.7 GiB to spare. The estimate counts the tables whole: on the
#   device mimc's B tables drop their third of rows at infinity (device/density.py), 12 GiB
#   less. bits needs no more: the same tables (53 variables fewer), and its witness MSMs'
#   split (~1% of the scalars neither 0 nor 1) takes less scratch than Pippenger. So
#   PROOFFLOW_MSM_PRECOMPUTE=0: the first copy the plans would add is B_G2's (24 GiB: 153.2,
#   refused), and a G1 table's (12 GiB) does not fit either. PROOFFLOW_MSM_OVERLAP=0: the
#   MSMs' scratch at once adds 61.2 GiB. PROOFFLOW_KEY_BUDGET=0.6 (83.9 GiB): the default half
#   (69.9 GiB) is short of the key's 72.0. Setup's fixed-base kernels take a chunk of 2^22
#   points at a time (< 2.5 GiB with the XYZZ scratch of their batched inversions).
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] && [ $(($# % 2)) = 0 ] || { echo "usage: $0 MODE CIRCUIT [MODE CIRCUIT ...] (cs, setup, run, clean; mimc, bits)"; exit 2; }
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
SITE=/root/pf/site  # the carried wheels, installed once a machine
if [ ! -e "$SITE/.installed" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
        && touch "$SITE/.installed" || { echo "installing the carried wheels failed"; exit 1; }
fi
export PYTHONPATH=$SITE:$PWD PATH=$SITE/bin:$PATH
export PROOFFLOW_KERNEL_DIR=/root/pf/kernels PROOFFLOW_CACHE=/root/pf/cache
. bench/_kernels.sh  # prebuilt cubins, if carried
export PROOFFLOW_STAGING_BUDGET=$((16 << 30)) PROOFFLOW_SHARED_STAGING=/dev/shm/pf-staging
export PROOFFLOW_MSM_PRECOMPUTE=0 PROOFFLOW_MSM_OVERLAP=0 PROOFFLOW_KEY_BUDGET=0.6
t0=$SECONDS
left() { local s=$((570 - (SECONDS - t0))); echo $((s > 1 ? s : 1)); }
memory() { grep -E '^(MemTotal|MemAvailable|Shmem):' /proc/meminfo; df -h / /dev/shm | tail -n +2; }

step() {  # MODE CIRCUIT
    local mode=$1 c=$2 rc=0 s0=$SECONDS
    local key=/dev/shm/pf/params/$c-log2_27-seed0
    case "$c" in mimc | bits) ;; *) echo "circuit: mimc or bits, not $c"; return 2 ;; esac
    echo "== $mode $c at $((SECONDS - t0)) s"
    case "$mode" in
    cs)
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
        memory | tee "$OUT/memory-$c.txt"
        python3 -m proofflow.cli kernels build --json > "$OUT/kernels.json" 2> "$OUT/kernels.log" &
        local kernels=$!
        timeout -k 5 "$(left)" python3 -c "import sys; from proofflow.prover.circuits import get_circuit
get_circuit(sys.argv[1], 27).constraint_system" "$c"
        rc=$?
        echo "constraint system $c 2^27: $((SECONDS - s0)) s (rc $rc)"
        wait $kernels; echo "kernels: rc $?"
        du -sh "$PROOFFLOW_CACHE"/constraint-systems/*
        ;;
    setup)
        memory
        timeout -k 5 "$(left)" python3 -m proofflow.prover setup --circuit "$c" --log2 27 --seed 0 --backend gpu \
            --out "$key" > "$OUT/setup-$c.log" 2>&1
        rc=$?
        tail -4 "$OUT/setup-$c.log"
        echo "setup $c 2^27: $((SECONDS - s0)) s (rc $rc)"
        du -sh "$key"; memory
        ;;
    run)
        memory
        local repeats=$([ "$c" = mimc ] && echo 3 || echo 5)
        timeout -k 5 "$(left)" python3 -m bench.partition --circuit "$c" --log2 27 --key "$key" --backend gpu \
            --warmup 1 --repeats "${REPEATS:-$repeats}" --out "$OUT/partition-h200-$c-2p27.json" 2>&1 \
            | tee "$OUT/partition-$c.log"
        rc=${PIPESTATUS[0]}
        memory
        ;;
    clean)  # one key at a time (77.3 GB of /dev/shm each), one constraint system on the disk
        rm -rf "$key" "$PROOFFLOW_CACHE"/constraint-systems/"$c"-2^27-*
        memory
        ;;
    *) echo "mode: cs, setup, run or clean, not $mode"; return 2 ;;
    esac
    echo "== $mode $c: $((SECONDS - s0)) s (rc $rc)"
    return $rc
}

status=0
while [ $# -ge 2 ]; do
    step "$1" "$2" || status=$?  # a failed run still lets the next steps (clean, the next family's cs) go
    shift 2
done
echo "done at $((SECONDS - t0)) s (rc $status)"
exit $status
