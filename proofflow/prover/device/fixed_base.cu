// Fixed-base multiplication for the setup: s_i * G for many scalars s_i and one generator
// G of G1 or G2, one thread a batch of scalars. A window table holds T[w * 256 + d] = d *
// 2^(8w) * G (affine, Montgomery; d = 0 unused) for the 32 8-bit windows of a 256-bit
// scalar, so a product is at most 32 mixed additions of table points, no doubling. A
// thread's sums are turned into affine coordinates with one Fermat inversion for its whole
// batch (affine_batch: a G1 point's inversion alone was ~60% of its work) and written out
// of Montgomery form: the xy-LE bytes of prover/points.py ((0, 0) for s = 0), as the CPU
// path's point library gives. The scalars are Fr vectors in Montgomery form (prover/field/fr.py).
#include "fr.cuh"
#include "curve.cuh"

#define FB_WINDOWS 32  // 8-bit windows of a canonical scalar (< 2^255)
#define FB_DIGITS 256

template <class F> PF_INLINE xyzz_t<F> fixed_base_sum(const u64* table, const u32* scalars, u64 i) {
    u64 s[4];
    canonical_scalar(scalars, i, s);
    xyzz_t<F> acc = xyzz_inf<F>();
    for (int w = 0; w < FB_WINDOWS; w++) {
        u32 d = (u32)(s[w >> 3] >> (8 * (w & 7))) & 0xffu;
        if (!d) continue;
        uint4 v[F::U64];
        affine_fetch<F>(table, (u64)(w * FB_DIGITS + d), v);
        acc = xyzz_add_affine(acc, f_from4<F>(v), f_from4<F>(v + F::U64 / 2));
    }
    return acc;
}

// Batch t of `batch` consecutive scalars: out[j] = s_j * G for j < n, the XYZZ sums
// waiting in tmp (4 coordinates a point) for the batch's one inversion.
template <class F> PF_INLINE void fixed_base_body(const u64* table, const u32* scalars, u64* tmp, u64 n, u32 batch,
                                                  u64 t, u64* out) {
    u64 lo = t * batch, hi = lo + batch < n ? lo + batch : n;
    affine_batch<F> o(out, tmp);
    for (u64 j = lo; j < hi; j++) o.put(j, fixed_base_sum<F>(table, scalars, j));
    o.finish(lo, hi, true);
}

#ifdef __CUDACC__
// One module per group, as msm.cu. G1 is held to 128 registers (4 blocks a multiprocessor,
// as before the batches; 158 unbounded, 3 blocks), at a few words of spills in mul32; G2
// takes 255 (2 blocks).
#define FIXED_BASE_KERNEL(G, F, BOUNDS)                                                            \
    extern "C" __global__ void BOUNDS fixed_base_##G(const u64* table, const u32* scalars, u64 n,  \
                                                     u64* out, u64* tmp, u32 batch) {              \
        u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;                                        \
        if (t * batch < n) fixed_base_body<F>(table, scalars, tmp, n, batch, t, out);              \
    }

#if defined(PF_GROUP_G1)
FIXED_BASE_KERNEL(g1, fq_t, __launch_bounds__(128, 4))
#elif defined(PF_GROUP_G2)
FIXED_BASE_KERNEL(g2, fq2_t, __launch_bounds__(128))
#else
#error "compile fixed_base.cu with -DPF_GROUP_G1 or -DPF_GROUP_G2"
#endif
#endif  // __CUDACC__
