// The split of a witness MSM by scalar value (proofflow/prover/device/sparse.py): each scalar
// classified as 0, 1 or other, and the sum of the points whose scalar is 1, for G1 and G2.
//
// The sum is a tree reduction in XYZZ coordinates (curve.cuh): thread k of T adds the
// affine points idx[k], idx[k + T], idx[k + 2T], ... (many a thread, read in index order
// across a warp, so runs of neighbouring indices load neighbouring points), then the T
// partial sums are folded the same way, a few a thread per launch, until one is left.
// Points at infinity ((0, 0) in the table) are skipped, as msm.cu's accumulation does.
//
// Each kernel's per-thread work is a template body (PF_HD) that the CPU twin
// (tests/kernel_twin.cpp) runs in a loop on the host.
#include "fr.cuh"
#include "curve.cuh"

#define BITSUM_ZERO 0
#define BITSUM_ONE 1
#define BITSUM_OTHER 2

// The class of scalar i of a Montgomery Fr vector: its canonical value 0, 1 or other (read
// as msm.cu reads scalars, so the split agrees with the digits Pippenger would cut).
PF_INLINE unsigned char bitsum_class_body(const u32* scalars, u64 i) {
    u64 s[4];
    canonical_scalar(scalars, i, s);
    if (s[1] | s[2] | s[3] | (s[0] >> 1)) return BITSUM_OTHER;
    return s[0] ? BITSUM_ONE : BITSUM_ZERO;
}

// Thread k of `threads`: the sum of the affine points idx[k + j * threads] (j >= 0, below
// count; indices below 2^31, so read as entries of positive digits).
template <class F> PF_INLINE void bitsum_points_body(const u64* pts, const u32* idx, u32 count, u32 threads, u32 k,
                                                     u64* out) {
    xyzz_t<F> acc = xyzz_inf<F>();
    entry_reader<F> in(pts, idx, k, count, threads);
    for (u32 j = k; j < count; j += threads) {
        F x, y;
        in.read(j, x, y);
        if (!(f_is_zero(x) && f_is_zero(y))) acc = xyzz_add_affine(acc, x, y);
    }
    xyzz_store(out + 4ull * F::U64 * k, acc);
}

// Thread k of `threads`: the sum of the XYZZ points in[k + j * threads] (j >= 0, below count).
template <class F> PF_INLINE void bitsum_fold_body(const u64* in, u32 count, u32 threads, u32 k, u64* out) {
    xyzz_t<F> acc = xyzz_inf<F>();
    for (u32 j = k; j < count; j += threads) acc = xyzz_add(acc, xyzz_load<F>(in + 4ull * F::U64 * j));
    xyzz_store(out + 4ull * F::U64 * k, acc);
}

#ifdef __CUDACC__
extern "C" __global__ void bitsum_classify(const u32* scalars, u64 n, unsigned char* out) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = bitsum_class_body(scalars, i);
}

// Per group, launch bounds as msm.cu's accumulation (G2's points and sums are twice as wide).
#define BITSUM_KERNELS(G, F, BOUNDS)                                                                   \
    extern "C" __global__ void BOUNDS bitsum_points_##G(const u64* pts, const u32* idx, u32 count,     \
                                                        u32 threads, u64* out) {                       \
        u32 k = blockIdx.x * blockDim.x + threadIdx.x;                                                 \
        if (k < threads) bitsum_points_body<F>(pts, idx, count, threads, k, out);                      \
    }                                                                                                  \
    extern "C" __global__ void BOUNDS bitsum_fold_##G(const u64* in, u32 count, u32 threads, u64* out) { \
        u32 k = blockIdx.x * blockDim.x + threadIdx.x;                                                 \
        if (k < threads) bitsum_fold_body<F>(in, count, threads, k, out);                              \
    }

#if defined(PF_GROUP_G1)
BITSUM_KERNELS(g1, fq_t, __launch_bounds__(128, 4))
#elif defined(PF_GROUP_G2)
BITSUM_KERNELS(g2, fq2_t, __launch_bounds__(128, 2))
#else
#error "compile bitsum.cu with -DPF_GROUP_G1 or -DPF_GROUP_G2"
#endif
#endif  // __CUDACC__
