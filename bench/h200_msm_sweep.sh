#!/usr/bin/env bash
# The MSM plan sweep that pippenger's cost model is refitted to (bench.fit_msm_cost), on the
# H200 in one device call:
#   carry .whl (and .kernels.tar.xz); command: [NOTE=text] bash bench/h200_msm_sweep.sh
# Lines of bench.msm_phases (each plan: its copies built once, then the median wall time of 3
# MSMs and each kernel's time) go to $OUT/msm-phases.jsonl, to be appended to
# bench/results/msm-phases-h200.jsonl; then
#   python -m bench.fit_msm_cost bench/results/msm-phases-h200.jsonl --variant call --balanced
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
J=$OUT/msm-phases.jsonl NOTE=${NOTE:-$(date -u +%F)}
t0=$SECONDS
left() { local s=$((570 - (SECONDS - t0))); echo $((s > 1 ? s : 1)); }
. bench/_site.sh
export PYTHONUNBUFFERED=1
. bench/_kernels.sh
status=0
phases() {  # NOTE-SUFFIX ARGS...
    local note=$1; shift
    timeout -k 5 "$(left)" python3 -m bench.msm_phases "$@" --note "$NOTE, $note" >> "$J" 2>> "$OUT/msm-phases.log" \
        || { status=1; echo "failed: $*"; }
    echo "$* done at $((SECONDS - t0)) s"
}
phases "sweep" --group g1 --log2 24 --plan 16,1 16,4 16,16 18,15 19,2 20,5 20,13 22,12
phases "sweep" --group g1 --log2 22 --plan 16,1 16,4 16,8 16,16 18,15 19,7 20,13
phases "sweep" --group g2 --log2 22 --plan 16,1 16,4 16,8 18,15 20,5 20,13
echo "done at $((SECONDS - t0)) s (rc $status)"
exit $status
