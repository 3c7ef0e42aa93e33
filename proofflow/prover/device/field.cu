// Element-wise Fq kernels for the tests and the product-rate benchmark (bench/gpu.py): the
// product and the square of the variant the module is compiled with (source.VARIANTS), each
// element fq_t::U64 u64 limbs (6 on BLS12-381), Montgomery form or not (the product is
// a * b / R mod q either way).
#include "fq.cuh"

#define GRID_STRIDE(i, n) for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)

extern "C" __global__ void fq_mul_vec(const u64* a, const u64* b, u64* out, u64 n) {
    GRID_STRIDE(i, n) fq_store(out + fq_t::U64 * i, fq_load(a + fq_t::U64 * i) * fq_load(b + fq_t::U64 * i));
}

extern "C" __global__ void fq_sqr_vec(const u64* a, u64* out, u64 n) {
    GRID_STRIDE(i, n) fq_store(out + fq_t::U64 * i, fq_load(a + fq_t::U64 * i).sqr());
}

// x[i] <- x[i] * y[i]^iters, or x[i]^(2^iters) with squares: dependent chains, for the rate alone.
extern "C" __global__ void fq_mul_chain(u64* x, const u64* y, u64 n, int iters) {
    GRID_STRIDE(i, n) {
        fq_t v = fq_load(x + fq_t::U64 * i), w = fq_load(y + fq_t::U64 * i);
        for (int k = 0; k < iters; k++) v = v * w;
        fq_store(x + fq_t::U64 * i, v);
    }
}

extern "C" __global__ void fq_sqr_chain(u64* x, u64 n, int iters) {
    GRID_STRIDE(i, n) {
        fq_t v = fq_load(x + fq_t::U64 * i);
        for (int k = 0; k < iters; k++) v = v.sqr();
        fq_store(x + fq_t::U64 * i, v);
    }
}
