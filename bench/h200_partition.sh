#!/usr/bin/env bash
# Issue #20's partition targets on the H200 (a MiMC partition's median device phase: 2^22
# <= 0.25 s, 2^24 <= 0.8 s), each size plain, with precomputed copies, and with the proof's
# MSMs overlapped on streams (PROOFFLOW_MSM_OVERLAP=1, item 4), in one device call:
#   carry .whl (and .kernels.tar.xz); command: [PRECOMPUTE=auto|BYTES] [REPEATS=5] bash bench/h200_partition.sh [LOG2 ...]
# LOG2 defaults to "22 24". Keys and caches are the stream's (bench/h200_stream.sh): /tmp/site,
# /dev/shm/pf-params and the default kernel and constraint-system directories, so a call that
# follows a stream on a warm machine finds its key and cubins there; a missing key is set up
# on the GPU first (~1 min at 2^24). bench.partition runs the partition alone on the device,
# without Airflow, and verifies every proof. Results: $OUT/partition-LABEL-mimc-2pL.json (LABEL
# h200, or h100 when the call got one), -2pL-pre.json (copies under
# PROOFFLOW_MSM_PRECOMPUTE=$PRECOMPUTE: auto, half the key budget less the key, or bytes) and
# -2pL-overlap.json, and the logs.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
SIZES=${*:-22 24}; PRECOMPUTE=${PRECOMPUTE:-auto}; REPEATS=${REPEATS:-5}
t0=$SECONDS
left() { local s=$((570 - (SECONDS - t0))); echo $((s > 1 ? s : 1)); }
. bench/_site.sh
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=8
. bench/_kernels.sh
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader | tee "$OUT/device.txt"
case $(head -1 "$OUT/device.txt") in *H100*) LABEL=h100 ;; *) LABEL=h200 ;; esac
status=0
for L in $SIZES; do
    key=/dev/shm/pf-params/mimc-log2_$L-seed0
    if [ ! -f "$key/params.json" ]; then
        timeout -k 5 "$(left)" python3 -m proofflow.prover setup --circuit mimc --log2 "$L" --seed 0 --backend gpu \
            --out "$key" > "$OUT/setup-2p$L.log" 2>&1 || { tail -5 "$OUT/setup-2p$L.log"; status=1; continue; }
        echo "2^$L key set up at $((SECONDS - t0)) s"
    fi
    for variant in plain pre overlap; do  # (suffix, copies' bytes, overlap)
        case $variant in
            plain) suffix= pre=0 ovl=0 ;;
            pre) suffix=-pre pre=$PRECOMPUTE ovl=0 ;;
            overlap) suffix=-overlap pre=0 ovl=1 ;;
        esac
        name=partition-$LABEL-mimc-2p$L$suffix
        PROOFFLOW_MSM_PRECOMPUTE=$pre PROOFFLOW_MSM_OVERLAP=$ovl timeout -k 5 "$(left)" python3 -m bench.partition \
            --circuit mimc --log2 "$L" --key "$key" --warmup 1 --repeats "$REPEATS" --out "$OUT/$name.json" \
            > "$OUT/$name.log" 2>&1
        rc=$?; [ $rc = 0 ] || status=$rc
        echo "2^$L $variant: rc $rc at $((SECONDS - t0)) s; $(tail -1 "$OUT/$name.log")"
    done
done
echo "done at $((SECONDS - t0)) s (rc $status)"
exit $status
