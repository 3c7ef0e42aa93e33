// Fixed-base multiplication for the setup: s_i * G for many scalars s_i and one generator
// G of G1 or G2, one thread a scalar. A window table holds T[w * 256 + d] = d * 2^(8w) * G
// (affine, Montgomery; d = 0 unused) for the 32 8-bit windows of a 256-bit scalar, so a
// product is at most 32 mixed additions of table points, no doubling; the sum is turned
// into affine coordinates with one Fermat inversion and written out of Montgomery form:
// the xy-LE bytes of prover/curve.py ((0, 0) for s = 0), as the CPU path's arkworks gives.
// The scalars are Fr vectors in Montgomery form (prover/field/fr.py).
#include "fr.cuh"
#include "curve.cuh"

#define FB_WINDOWS 32  // 8-bit windows of a canonical scalar (< 2^255)
#define FB_DIGITS 256

template <class F> PF_INLINE void fixed_base_body(const u64* table, const u32* scalars, u64 i, u64* out) {
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
    F x, y;
    xyzz_to_affine(acc, x, y);
    u64* o = out + 2ull * F::U64 * i;
    f_store(o, x);
    f_store(o + F::U64, y);
}

#ifdef __CUDACC__
// One module per group, as msm.cu. G1 fits 128 registers (4 blocks a multiprocessor), G2
// takes 255 (2 blocks).
#define FIXED_BASE_KERNEL(G, F)                                                                    \
    extern "C" __global__ void __launch_bounds__(128) fixed_base_##G(const u64* table, const u32* scalars, \
                                                                     u64 n, u64* out) {            \
        u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;                                        \
        if (i < n) fixed_base_body<F>(table, scalars, i, out);                                     \
    }

#if defined(PF_GROUP_G1)
FIXED_BASE_KERNEL(g1, fq_t)
#elif defined(PF_GROUP_G2)
FIXED_BASE_KERNEL(g2, fq2_t)
#else
#error "compile fixed_base.cu with -DPF_GROUP_G1 or -DPF_GROUP_G2"
#endif
#endif  // __CUDACC__
