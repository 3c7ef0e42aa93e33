# Sourced by the device scripts: the cubins compiled ahead by bench/gpu_kernels.sh, when
# .kernels.tar.xz was carried, unpacked into the kernel directory of the script's own
# processes (PROOFFLOW_KERNEL_DIR, if the script set it) and into the default one, which
# the prover services of an Airflow deployment use (a deployment inherits no PROOFFLOW_*
# setting), so that nothing compiles on the device.
if [ -f .kernels.tar.xz ]; then
    for dir in "${PROOFFLOW_KERNEL_DIR:-}" "${XDG_CACHE_HOME:-$HOME/.cache}/proofflow/kernels"; do
        if [ -n "$dir" ]; then
            mkdir -p "$dir" && tar xJf .kernels.tar.xz -C "$dir"
        fi
    done
    echo "prebuilt kernels: $(tar tJf .kernels.tar.xz | grep -c '\.cubin$') cubins unpacked"
fi
