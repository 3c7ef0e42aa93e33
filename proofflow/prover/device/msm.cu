// G1 and G2 multi-scalar multiplication over a curve (source.curve_header) by Pippenger's
// bucket method, one implementation templated over the coordinate field (curve.cuh: fq_t
// for G1, fq2_t for G2).
//
// Points live on the device in affine Montgomery form (G1: x, y in Fq, 48 bytes each on
// BLS12-381; G2: x, y in Fq2, 96 bytes each; little-endian), (0, 0) standing for infinity. Buckets
// accumulate in XYZZ coordinates. Scalars arrive as Fr vectors in Montgomery form and are
// cut into signed c-bit digits, so a window needs 2^(c-1) buckets. Buckets are filled by a
// counting sort (count, scan, scatter) per window, then summed in pieces of a bounded
// number of entries, one thread a piece, so that a bucket holding many entries (skewed
// scalars) does not serialize on one thread.
//
// Precomputed multiples: a table may hold K ("shifts") copies of its n points, copy k
// scaled by 2^(c k) (rows k n .. k n + n - 1, built once by msm_shift). Window w's digit d
// of scalar i then stands for d * 2^(c (w mod K)) * P_i, point (w mod K) n + i of that
// table, times 2^(c K (w div K)): the K windows of one group w div K share a bucket set,
// and the bucket reductions fall from one a window to one a group. K = 1 is the plain MSM.
//
// Batch-affine rounds (msm_affine.cuh) may take the bulk of a bucket's additions before
// the accumulation: affine additions whose slopes share one inversion a round.
//
// Each kernel's per-thread work is a template body (PF_HD): the extern "C" kernels at the
// end instantiate it per group, and the CPU twin (tests/kernel_twin.cpp) runs the same
// bodies in a loop on the host.
#include "fr.cuh"
#include "curve.cuh"
#include "msm_affine.cuh"

// xy-LE canonical coordinates -> Montgomery form, point i of the table, in place.
template <class F> PF_INLINE void to_montgomery_body(u64* pts, u64 i) {
    u64* p = pts + 2ull * F::U64 * i;
    f_store(p, f_to_mont(f_load<F>(p)));
    f_store(p + F::U64, f_to_mont(f_load<F>(p + F::U64)));
}

// Signed c-bit digit of window w of the canonical scalar s (4 limbs); carry in/out.
PF_INLINE int window_digit(const u64* s, int w, int c, int& carry) {
    int bit = w * c, limb = bit >> 6, shift = bit & 63;
    u64 v = limb < 4 ? s[limb] >> shift : 0;
    if (shift && limb + 1 < 4) v |= s[limb + 1] << (64 - shift);
    int d = (int)(v & ((1ull << c) - 1)) + carry;
    if (d > (1 << (c - 1))) { d -= 1 << c; carry = 1; } else carry = 0;
    return d;
}

#define NO_SLOT 0xffffffffu

// Bucket slot of window w's digit d: g * (nb + 1) + |d| in the bucket set g = w / shifts of
// its group, NO_SLOT for a zero digit.
PF_INLINE u32 digit_slot(int w, int shifts, int d, int nb) {
    return d ? w / shifts * (nb + 1) + (d < 0 ? -d : d) : NO_SLOT;
}

// The bucket entry of window w's digit d of scalar i: point (w mod shifts) n + i of the
// table (the copy scaled by 2^(c (w mod shifts))), the digit's sign in the top bit. The
// host keeps shifts * n <= 2^31.
PF_INLINE u32 digit_entry(u64 i, u64 n, int w, int shifts, int d) {
    return (u32)((u64)(w % shifts) * n + i) | (d < 0 ? 0x80000000u : 0u);
}

// Piece k of a segment list cut into pieces of at most `size` items: segment seg of
// len[seg] items from start[seg] has ceil(len / size) pieces first[seg], first[seg] + 1, ...
// of near-equal length (not `size` and a remainder: a warp's threads then finish together).
PF_INLINE void piece_range(const u32* start, const u32* len, const u32* piece_seg,
                           const u32* seg_first, u32 k, u32 size, u32& lo, u32& hi) {
    u32 seg = piece_seg[k], n = len[seg], parts = (n + size - 1) / size, j = k - seg_first[seg];
    lo = start[seg] + (u32)((u64)j * n / parts);
    hi = start[seg] + (u32)((u64)(j + 1) * n / parts);
}

// Piece k of a bucket's entries: their sum.
template <class F> PF_INLINE void accumulate_body(const u64* pts, const u32* entries, const u32* offsets,
                                             const u32* counts, const u32* piece_seg, const u32* seg_first,
                                             u32 size, u32 k, u64* out) {
    u32 lo, hi;
    piece_range(offsets, counts, piece_seg, seg_first, k, size, lo, hi);
    xyzz_t<F> acc = xyzz_inf<F>();
    entry_reader<F> in(pts, entries, lo, hi);
    for (u32 j = lo; j < hi; j++) {
        F x, y;
        in.read(j, x, y);
        if (!(f_is_zero(x) && f_is_zero(y))) acc = xyzz_add_affine(acc, x, y);
    }
    xyzz_store(out + 4ull * F::U64 * k, acc);
}

// Span k of the sorted entries, balanced across threads: entries k * size .. k * size +
// size - 1 (fewer in the last span) whatever buckets they fall in, so every thread adds as
// many points (pieces of near-equal length leave a third of a warp's lanes idle at 128
// entries a bucket: docs/gpu-kernels.md). The segments lie back to back (offsets[s + 1] =
// offsets[s] + counts[s]); span_seg[k] is the one holding entry k * size. Bucket s meets
// spans offsets[s] / size .. (offsets[s] + counts[s] - 1) / size, and the sum of its
// entries in span k goes to slot seg_first[s] + k - offsets[s] / size: a bucket starting
// inside the span, to its first slot.
template <class F> PF_INLINE void accumulate_span_body(const u64* pts, const u32* entries, const u32* offsets,
                                                  const u32* counts, const u32* span_seg, const u32* seg_first,
                                                  u32 size, u32 total, u32 k, u64* out) {
    u64 lo = (u64)k * size, hi = lo + size < total ? lo + size : total;
    u32 seg = span_seg[k];
    u64 end = (u64)offsets[seg] + counts[seg];
    u64* slot = out + 4ull * F::U64 * (seg_first[seg] + k - offsets[seg] / size);
    xyzz_t<F> acc = xyzz_inf<F>();
    entry_reader<F> in(pts, entries, lo, hi);
    for (u64 j = lo; j < hi; j++) {
        F x, y;
        in.read(j, x, y);
        if (!(f_is_zero(x) && f_is_zero(y))) acc = xyzz_add_affine(acc, x, y);
        if (j + 1 == end || j + 1 == hi) {
            xyzz_store(slot, acc);
            if (j + 1 < hi) {  // the next non-empty bucket starts in this span
                do seg++; while (!counts[seg]);
                end = (u64)offsets[seg] + counts[seg];
                slot = out + 4ull * F::U64 * seg_first[seg];
                acc = xyzz_inf<F>();
            }
        }
    }
}

// Group k of at most `size` consecutive XYZZ points of a segment: their sum.
template <class F> PF_INLINE void combine_body(const u64* in, const u32* start, const u32* len, const u32* group_seg,
                                          const u32* seg_first, u32 size, u32 k, u64* out) {
    u32 lo, hi;
    piece_range(start, len, group_seg, seg_first, k, size, lo, hi);
    xyzz_t<F> acc = xyzz_load<F>(in + 4ull * F::U64 * lo);
    for (u32 j = lo + 1; j < hi; j++) acc = xyzz_add(acc, xyzz_load<F>(in + 4ull * F::U64 * j));
    xyzz_store(out + 4ull * F::U64 * k, acc);
}

// Bucket reduction in chunks: thread t = (w, k) takes buckets lo..hi-1 (numbered from 1) of
// bucket set w (a window, or a group of windows) and returns sum_b b * B_b over them as
// running sums plus (lo - 1) * (sum of B_b). Bucket (w, b) is slot w * (nb + 1) + b, its
// sum at parts[first[slot]] if it has one (len <= 1).
template <class F> PF_INLINE void reduce_body(const u64* parts, const u32* first, const u32* len, int nb,
                                         int chunks, int t, u64* out) {
    int w = t / chunks, k = t % chunks, per = (nb + chunks - 1) / chunks;
    int lo = 1 + k * per, hi = pf_min(nb + 1, lo + per);
    xyzz_t<F> running = xyzz_inf<F>(), acc = xyzz_inf<F>();
    for (int b = hi - 1; b >= lo; b--) {
        u32 slot = w * (nb + 1) + b;
        if (len[slot]) running = xyzz_add(running, xyzz_load<F>(parts + 4ull * F::U64 * first[slot]));
        acc = xyzz_add(acc, running);
    }
    // acc holds sum (b - lo + 1) B_b; add (lo - 1) * running by double-and-add.
    xyzz_t<F> extra = xyzz_inf<F>();
    for (int bit = 31 - pf_clz(pf_max(lo - 1, 1)); bit >= 0 && lo > 1; bit--) {
        extra = xyzz_dbl(extra);
        if (((lo - 1) >> bit) & 1) extra = xyzz_add(extra, running);
    }
    xyzz_store(out + 4ull * F::U64 * t, xyzz_add(acc, extra));
}

// 2^dbls * (x, y) for dbls >= 1, infinity for (0, 0).
template <class F> PF_INLINE xyzz_t<F> affine_shift(const F& x, const F& y, int dbls) {
    if (f_is_zero(x) && f_is_zero(y)) return xyzz_inf<F>();
    xyzz_t<F> p = affine_dbl(x, y);
    for (int k = 1; k < dbls; k++) p = xyzz_dbl(p);
    return p;
}

// Batch t of `batch` consecutive points of a precomputed table's copy: dst[j] =
// 2^dbls * src[j], affine Montgomery, j < n, with one inversion a batch (affine_batch:
// the XYZZ multiples wait in tmp, 4 coordinates a point).
template <class F> PF_INLINE void shift_body(const u64* src, u64* dst, u64* tmp, u64 n, int dbls, u32 batch,
                                             u64 t) {
    u64 lo = t * batch, hi = lo + batch < n ? lo + batch : n;
    affine_batch<F> out(dst, tmp);
    for (u64 j = lo; j < hi; j++) {
        const u64* s = src + 2ull * F::U64 * j;
        out.put(j, affine_shift(f_load<F>(s), f_load<F>(s + F::U64), dbls));
    }
    out.finish(lo, hi, false);
}

#ifdef __CUDACC__
// ---- kernels (the scalar sort is the same for both groups) ----

// The bucket slot of each window's digit, NO_SLOT for a zero digit or past n. The sort
// kernels aggregate equal slots across the warp (one atomic per distinct slot): with
// skewed scalars most of a warp hits one counter. Every lane runs every window, so the
// full-warp intrinsics see all 32 lanes (blockDim is a multiple of 32).
#define FOR_EACH_SLOT(BODY)                                                   \
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;                       \
    u64 s[4] = {0, 0, 0, 0};                                                  \
    if (i < n) canonical_scalar(scalars, i, s);                               \
    int carry = 0, nb = 1 << (c - 1), lane = threadIdx.x & 31;                \
    for (int w = 0; w < nwin; w++) {                                          \
        int d = window_digit(s, w, c, carry);                                 \
        u32 slot = digit_slot(w, shifts, d, nb);                              \
        u32 peers = __match_any_sync(0xffffffffu, slot);                      \
        int leader = __ffs(peers) - 1;                                        \
        if (slot != NO_SLOT) { BODY }                                         \
    }

// counts[slot] += 1 for every non-zero digit
extern "C" __global__ void msm_count(const u32* scalars, u64 n, int c, int nwin, int shifts, u32* counts) {
    FOR_EACH_SLOT(if (lane == leader) atomicAdd(&counts[slot], (u32)__popc(peers));)
}

// Place each (point, sign) into its bucket's slice: cursor starts at the slices' offsets.
extern "C" __global__ void msm_scatter(const u32* scalars, u64 n, int c, int nwin, int shifts, u32* cursor,
                                       u32* entries) {
    FOR_EACH_SLOT(
        u32 base = 0;
        if (lane == leader) base = atomicAdd(&cursor[slot], (u32)__popc(peers));
        base = __shfl_sync(peers, base, leader);
        entries[base + __popc(peers & ((1u << lane) - 1))] = digit_entry(i, n, w, shifts, d);)
}

// Per group: the same bodies, launch bounds for its register needs. G1's accumulation runs
// at 128 registers for 16 warps a multiprocessor (docs/gpu-kernels.md); a G2 point and
// accumulator are twice as wide, so its kernels get the whole 255-register budget.
#define MSM_KERNELS(G, F, ACC_BOUNDS)                                                              \
    extern "C" __global__ void to_montgomery_##G(u64* pts, u64 n) {                                \
        u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;                                        \
        if (i < n) to_montgomery_body<F>(pts, i);                                                  \
    }                                                                                              \
    extern "C" __global__ void ACC_BOUNDS msm_accumulate_##G(                                      \
            const u64* pts, const u32* entries, const u32* offsets, const u32* counts,             \
            const u32* piece_seg, const u32* seg_first, u32 npieces, u32 size, u64* out) {         \
        u32 k = blockIdx.x * blockDim.x + threadIdx.x;                                             \
        if (k < npieces) accumulate_body<F>(pts, entries, offsets, counts, piece_seg, seg_first, size, k, out); \
    }                                                                                              \
    extern "C" __global__ void ACC_BOUNDS msm_accumulate_spans_##G(                                \
            const u64* pts, const u32* entries, const u32* offsets, const u32* counts,             \
            const u32* span_seg, const u32* seg_first, u32 nspans, u32 size, u32 total, u64* out) { \
        u32 k = blockIdx.x * blockDim.x + threadIdx.x;                                             \
        if (k < nspans) accumulate_span_body<F>(pts, entries, offsets, counts, span_seg, seg_first, size, total, k, out); \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(128) msm_combine_##G(                             \
            const u64* in, const u32* start, const u32* len, const u32* group_seg,                 \
            const u32* seg_first, u32 ngroups, u32 size, u64* out) {                               \
        u32 k = blockIdx.x * blockDim.x + threadIdx.x;                                             \
        if (k < ngroups) combine_body<F>(in, start, len, group_seg, seg_first, size, k, out);     \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(128) msm_reduce_##G(                              \
            const u64* parts, const u32* first, const u32* len, int nb, int nsets, int chunks,     \
            u64* out) {                                                                            \
        int t = blockIdx.x * blockDim.x + threadIdx.x;                                             \
        if (t < nsets * chunks) reduce_body<F>(parts, first, len, nb, chunks, t, out);            \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(128) msm_shift_##G(                               \
            const u64* src, u64* dst, u64* tmp, u64 n, int dbls, u32 batch) {                      \
        u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;                                        \
        if (t * batch < n) shift_body<F>(src, dst, tmp, n, dbls, batch, t);                        \
    }

// One module per group (prover.kernels.load(..., group=...)): a G1 user never waits for
// the G2 kernels to compile.
#if defined(PF_GROUP_G1)
// 4 blocks an SM leave a thread 128 registers: 5 and 6 spilled and measured slower on the
// H200 (docs/gpu-kernels.md)
MSM_KERNELS(g1, fq_t, __launch_bounds__(128, 4))
AFFINE_KERNELS(g1, fq_t, __launch_bounds__(128, 4))
#elif defined(PF_GROUP_G2)
MSM_KERNELS(g2, fq2_t, __launch_bounds__(128, 2))
AFFINE_KERNELS(g2, fq2_t, __launch_bounds__(128, 2))
#else
#error "compile msm.cu with -DPF_GROUP_G1 or -DPF_GROUP_G2"
#endif
#endif  // __CUDACC__
