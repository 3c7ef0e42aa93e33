# Sourced by the device scripts that run an Airflow deployment, after the wheels went into
# /tmp/site (--no-compile). Every Airflow task is a new process that imports Airflow's lazily
# loaded modules (and proofflow's, which `proofflow setup` compiles); under
# PYTHONDONTWRITEBYTECODE no process caches their bytecode, so each task would compile them
# again (bench/results/host-cpu-cpu.json: 1.6x the host CPU a partition). Compiled once
# instead, in the background while the key is made; `bytecode_wait` before Airflow starts.
bytecode=
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then
    python3 -m compileall -q -j 0 /tmp/site > "$OUT/compileall.log" 2>&1 &
    bytecode=$!
fi
bytecode_wait() {
    if [ -n "$bytecode" ]; then
        if wait "$bytecode"; then echo "bytecode compiled"; else echo "compileall failed (see compileall.log)"; fi
    fi
}
