// Batch-affine rounds of the bucket accumulation (pippenger.py's `affine_rounds`), for G1
// and G2: an alternative to summing a bucket's entries with mixed XYZZ additions (8M + 2S
// each). Part of msm.cu (its bucket layout: start, len and the items' segments as
// pippenger's _split cuts them).
//
// A round pairs up each bucket's pending points (its entries in the first round, the sums
// of the round before after that) and adds each pair in affine coordinates: slope
// l = (y2 - y1) / (x2 - x1), or 3 x1^2 / 2 y1 for a doubling; x3 = l^2 - x1 - x2,
// y3 = l (x1 - x3) - y1: 2M + 1S once the slope's denominator is inverted. A bucket of n
// pending points leaves ceil(n / 2) sums (a lone point is carried over), so ceil(log2 n)
// rounds bring it to one point.
//
// The round's denominators share one Montgomery's trick over the whole grid. A leaf thread
// takes items t, t + threads, ... (a warp reads neighbouring items: the previous round's
// sums coalesced) and keeps the running product of their denominators (1M an item), the
// product before item k parked in the x of k's output slot, which its sum overwrites
// later. The threads' products are folded level by level (msm_invert_up: AFFINE_FAN values
// a thread, 1M each) until few are left, each of those is inverted by its own thread
// (Fermat), and the way down (msm_invert_down, 2M a value) gives each leaf thread the
// inverse of its product; the leaf's second pass walks its items backwards, each taking
// its inverse from it (2M) before adding its pair. An addition so costs ~5M + 1S plus
// ~3M / AFFINE_LEAF for the levels above, against 8M + 2S.
//
// Special cases are exact, as in xyzz_add_affine: infinity ((0, 0)) on either side gives
// the other point, a + a doubles (y != 0), a + (-a) gives infinity; only pairs that need a
// slope put a denominator into the product.
#ifndef PROOFFLOW_MSM_AFFINE_CUH
#define PROOFFLOW_MSM_AFFINE_CUH

#include "curve.cuh"

// An element through the read-only cache: the table and the previous round's sums.
template <class F> PF_INLINE F f_ldg(const u64* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    uint4 v[F::U64 / 2];
#pragma unroll
    for (int i = 0; i < F::U64 / 2; i++) v[i] = pf_ldg(q + i);
    return f_from4<F>(v);
}

// A pending point is an entry as msm_scatter writes them: a row of pts, the top bit
// negating y. After the first round the rows are the previous round's sums, entries the
// identity (pippenger.py), so every round reads its points the same way.
template <class F> PF_INLINE F pending_x(const u64* pts, u32 e) {
    return f_ldg<F>(pts + 2ull * F::U64 * (e & 0x7fffffffu));
}

template <class F> PF_INLINE F pending_y(const u64* pts, u32 e) {
    F y = f_ldg<F>(pts + 2ull * F::U64 * (e & 0x7fffffffu) + F::U64);
    return e >> 31 ? f_neg(y) : y;
}

enum { PAIR_A, PAIR_B, PAIR_INF, PAIR_ADD, PAIR_DBL };  // the sum: a, b, infinity, a + b (a != +-b), 2a

// What a + b is, and the denominator d of its slope where it has one (ADD, DBL).
template <class F> PF_INLINE int pair_kind(const F& x1, const F& y1, const F& x2, const F& y2, F& d) {
    if (f_is_zero(x2) && f_is_zero(y2)) return PAIR_A;
    if (f_is_zero(x1) && f_is_zero(y1)) return PAIR_B;
    d = f_sub(x2, x1);
    if (!f_is_zero(d)) return PAIR_ADD;
    if (f_is_zero(f_sub(y1, y2)) && !f_is_zero(y1)) {
        d = f_add(y1, y1);
        return PAIR_DBL;
    }
    return PAIR_INF;
}

// Item k of a round: pending points lo = 2j and, unless it is the last of an odd count,
// lo + 1 of its bucket (j = k - the bucket's first item). No division, unlike piece_range:
// this runs once an addition, not once a piece.
PF_INLINE void pair_range(const u32* start, const u32* len, const u32* item_seg, const u32* seg_first, u32 k,
                          u32& lo, u32& hi) {
    u32 seg = item_seg[k], j = k - seg_first[seg];
    lo = start[seg] + 2 * j;
    hi = lo + (2 * j + 1 < len[seg] ? 2 : 1);
}

// Item k's slope denominator, false where its sum needs none. Reads the two x only,
// unless they are equal or zero (doubling, negation, infinity: y decides).
template <class F> PF_INLINE bool pair_denominator(const u64* pts, const u32* entries, const u32* start,
                                                   const u32* len, const u32* item_seg, const u32* seg_first,
                                                   u32 k, F& d) {
    u32 lo, hi;
    pair_range(start, len, item_seg, seg_first, k, lo, hi);
    if (hi - lo < 2) return false;
    u32 ea = entries[lo], eb = entries[lo + 1];
    F x1 = pending_x<F>(pts, ea), x2 = pending_x<F>(pts, eb);
    d = f_sub(x2, x1);
    if (!f_is_zero(d) && !f_is_zero(x1) && !f_is_zero(x2)) return true;
    int kind = pair_kind(x1, pending_y<F>(pts, ea), x2, pending_y<F>(pts, eb), d);
    return kind == PAIR_ADD || kind == PAIR_DBL;
}

// Leaf thread t's first pass: the running product of its items' denominators, the one
// before item k into out[k]'s x, the whole into tot[t].
template <class F> PF_INLINE void affine_up_body(const u64* pts, const u32* entries, const u32* start, const u32* len,
                                                 const u32* item_seg, const u32* seg_first, u32 items, u32 threads,
                                                 u32 t, u64* out, u64* tot) {
    F run = f_one<F>();
    for (u64 k = t; k < items; k += threads) {
        f_store(out + 2ull * F::U64 * k, run);
        F d;
        if (pair_denominator<F>(pts, entries, start, len, item_seg, seg_first, (u32)k, d)) run = f_mul(run, d);
    }
    f_store(tot + (u64)F::U64 * t, run);
}

// Leaf thread t's second pass, tot[t] now the inverse of its product: its items from the
// last, each one's inverse denominator = (the inverse of the product up to it) * (the
// product before it), then out[k] = its pair's sum.
template <class F> PF_INLINE void affine_down_body(const u64* pts, const u32* entries, const u32* start,
                                                   const u32* len, const u32* item_seg, const u32* seg_first,
                                                   u32 items, u32 threads, u32 t, u64* out, const u64* tot) {
    F inv = f_load<F>(tot + (u64)F::U64 * t);
    for (u64 k = t + (u64)(items - 1 - t) / threads * threads;; k -= threads) {
        u32 lo, hi;
        pair_range(start, len, item_seg, seg_first, (u32)k, lo, hi);
        u32 ea = entries[lo];
        F x1 = pending_x<F>(pts, ea), y1 = pending_y<F>(pts, ea), x2 = f_zero<F>(), y2 = f_zero<F>(), d;
        if (hi - lo == 2) {
            u32 eb = entries[lo + 1];
            x2 = pending_x<F>(pts, eb);
            y2 = pending_y<F>(pts, eb);
        }
        u64* o = out + 2ull * F::U64 * k;
        int kind = pair_kind(x1, y1, x2, y2, d);
        F x = kind == PAIR_B ? x2 : x1, y = kind == PAIR_B ? y2 : y1;
        if (kind == PAIR_INF) x = y = f_zero<F>();
        if (kind == PAIR_ADD || kind == PAIR_DBL) {
            F i = f_mul(inv, f_load<F>(o));  // 1 / d
            if (k >= threads) inv = f_mul(inv, d);
            F num;
            if (kind == PAIR_ADD) {
                num = f_sub(y2, y1);
            } else {
                F x1s = f_sqr(x1);
                num = f_add(f_add(x1s, x1s), x1s);
            }
            F l = f_mul(num, i);
            x = f_sub(f_sub(f_sqr(l), x1), x2);
            y = f_sub(f_mul(l, f_sub(x1, x)), y1);
        }
        f_store(o, x);
        f_store(o + F::U64, y);
        if (k < threads) break;
    }
}

// A level of the grid's Montgomery's trick: thread t folds values t, t + threads, ... of
// `count` (never zero): the product before each into pre, the whole into tot[t].
template <class F> PF_INLINE void invert_up_body(const u64* vals, u64* pre, u64 count, u64 threads, u64 t, u64* tot) {
    F run = f_one<F>();
    for (u64 e = t; e < count; e += threads) {
        f_store(pre + F::U64 * e, run);
        run = f_mul(run, f_load<F>(vals + F::U64 * e));
    }
    f_store(tot + F::U64 * t, run);
}

// The way back, tot[t] now the inverse of thread t's product: its values become their inverses.
template <class F> PF_INLINE void invert_down_body(u64* vals, const u64* pre, u64 count, u64 threads, u64 t,
                                                   const u64* tot) {
    F inv = f_load<F>(tot + F::U64 * t);
    for (u64 e = t + (count - 1 - t) / threads * threads;; e -= threads) {
        F v = f_load<F>(vals + F::U64 * e);
        f_store(vals + F::U64 * e, f_mul(inv, f_load<F>(pre + F::U64 * e)));
        if (e < threads) break;
        inv = f_mul(inv, v);
    }
}

template <class F> PF_INLINE void invert_body(u64* vals, u64 i) {
    f_store(vals + F::U64 * i, f_inv(f_load<F>(vals + F::U64 * i)));
}

#ifdef __CUDACC__
// Per group, the leaf passes under the accumulation's launch bounds (ACC_BOUNDS).
#define AFFINE_KERNELS(G, F, ACC_BOUNDS)                                                           \
    extern "C" __global__ void ACC_BOUNDS msm_affine_up_##G(                                       \
            const u64* pts, const u32* entries, const u32* start, const u32* len,                  \
            const u32* item_seg, const u32* seg_first, u32 items, u32 threads, u64* out, u64* tot) { \
        u32 t = blockIdx.x * blockDim.x + threadIdx.x;                                             \
        if (t < threads) affine_up_body<F>(pts, entries, start, len, item_seg, seg_first, items, threads, t, out, tot); \
    }                                                                                              \
    extern "C" __global__ void ACC_BOUNDS msm_affine_down_##G(                                     \
            const u64* pts, const u32* entries, const u32* start, const u32* len,                  \
            const u32* item_seg, const u32* seg_first, u32 items, u32 threads, u64* out, u64* tot) { \
        u32 t = blockIdx.x * blockDim.x + threadIdx.x;                                             \
        if (t < threads) affine_down_body<F>(pts, entries, start, len, item_seg, seg_first, items, threads, t, out, tot); \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(128) msm_invert_up_##G(                           \
            const u64* vals, u64* pre, u64 count, u64 threads, u64* tot) {                         \
        u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;                                        \
        if (t < threads) invert_up_body<F>(vals, pre, count, threads, t, tot);                     \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(128) msm_invert_down_##G(                         \
            u64* vals, const u64* pre, u64 count, u64 threads, const u64* tot) {                   \
        u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;                                        \
        if (t < threads) invert_down_body<F>(vals, pre, count, threads, t, tot);                   \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(128) msm_invert_##G(u64* vals, u64 count) {       \
        u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;                                        \
        if (i < count) invert_body<F>(vals, i);                                                    \
    }
#endif  // __CUDACC__

#endif  // PROOFFLOW_MSM_AFFINE_CUH
