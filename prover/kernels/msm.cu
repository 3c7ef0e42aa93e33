// G1 multi-scalar multiplication over BLS12-381 by Pippenger's bucket method.
//
// Points live on the device in affine Montgomery form (x, y: 6 x 64-bit limbs each,
// R = 2^384), (0, 0) standing for infinity (it is not on y^2 = x^3 + 4). Buckets
// accumulate in XYZZ coordinates (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2), whose mixed
// addition costs 8M + 2S and needs no inversion. Scalars arrive as Fr vectors in
// Montgomery form and are cut into signed c-bit digits, so a window needs 2^(c-1)
// buckets. Buckets are filled by a counting sort (count, scan, scatter) per window.
#include "fr.cuh"

struct fq_t { u64 l[6]; };
struct xyzz_t { fq_t x, y, zz, zzz; };

__constant__ u64 FQ_P[6] = {0xb9feffffffffaaabull, 0x1eabfffeb153ffffull, 0x6730d2a0f6b0f624ull,
                            0x64774b84f38512bfull, 0x4b1ba7b6434bacd7ull, 0x1a0111ea397fe69aull};
__constant__ u64 FQ_R2[6] = {0xf4df1f341c341746ull, 0x0a76e6a609d104f1ull, 0x8de5476c4c95b6d5ull,
                             0x67eb88a9939d83c0ull, 0x9a793e85b519952dull, 0x11988fe592cae3aaull};
#define FQ_INV 0x89f3fffcfffcfffdull  // -q^-1 mod 2^64

__device__ __forceinline__ bool fq_is_zero(const fq_t& a) {
    return (a.l[0] | a.l[1] | a.l[2] | a.l[3] | a.l[4] | a.l[5]) == 0;
}

__device__ __forceinline__ bool fq_eq(const fq_t& a, const fq_t& b) {
    u64 d = 0;
#pragma unroll
    for (int i = 0; i < 6; i++) d |= a.l[i] ^ b.l[i];
    return d == 0;
}

// t - q if t >= q (t < 2q)
__device__ __forceinline__ fq_t fq_reduce(const u64* t) {
    fq_t r;
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < 6; i++) {
        u64 d = t[i] - FQ_P[i];
        u64 b1 = t[i] < FQ_P[i];
        u64 d2 = d - borrow;
        u64 b2 = d < borrow;
        r.l[i] = d2;
        borrow = b1 | b2;
    }
    if (borrow) {
#pragma unroll
        for (int i = 0; i < 6; i++) r.l[i] = t[i];
    }
    return r;
}

__device__ __forceinline__ fq_t fq_add(const fq_t& a, const fq_t& b) {
    u64 t[6], carry = 0;  // a + b < 2q < 2^383: no carry out of the top limb
#pragma unroll
    for (int i = 0; i < 6; i++) {
        u64 s = a.l[i] + b.l[i];
        u64 c1 = s < a.l[i];
        t[i] = s + carry;
        carry = c1 | (t[i] < s);
    }
    return fq_reduce(t);
}

__device__ __forceinline__ fq_t fq_sub(const fq_t& a, const fq_t& b) {
    fq_t r;
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < 6; i++) {
        u64 d = a.l[i] - b.l[i];
        u64 b1 = a.l[i] < b.l[i];
        r.l[i] = d - borrow;
        borrow = b1 | (d < borrow);
    }
    if (borrow) {  // went negative: add q back
        u64 carry = 0;
#pragma unroll
        for (int i = 0; i < 6; i++) {
            u64 s = r.l[i] + FQ_P[i];
            u64 c1 = s < r.l[i];
            r.l[i] = s + carry;
            carry = c1 | (r.l[i] < s);
        }
    }
    return r;
}

__device__ __forceinline__ fq_t fq_neg(const fq_t& a) {
    fq_t zero = {{0, 0, 0, 0, 0, 0}};
    return fq_is_zero(a) ? a : fq_sub(zero, a);
}

__device__ __forceinline__ u64 mac64(u64 t, u64 a, u64 b, u64& carry) {
    u64 lo = a * b, hi = __umul64hi(a, b);
    lo += t;
    hi += lo < t;
    lo += carry;
    hi += lo < carry;
    carry = hi;
    return lo;
}

// Montgomery product (CIOS, 64-bit limbs); q < 2^382 keeps every row within 7 limbs.
__device__ __forceinline__ fq_t fq_mul(const fq_t& a, const fq_t& b) {
    u64 t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < 6; i++) {
        u64 c = 0;
#pragma unroll
        for (int j = 0; j < 6; j++) t[j] = mac64(t[j], a.l[j], b.l[i], c);
        t[6] += c;
        t[7] = t[6] < c;
        u64 m = t[0] * FQ_INV;
        c = 0;
        mac64(t[0], m, FQ_P[0], c);
#pragma unroll
        for (int j = 1; j < 6; j++) t[j - 1] = mac64(t[j], m, FQ_P[j], c);
        t[5] = t[6] + c;
        t[6] = t[7] + (t[5] < c);
    }
    return fq_reduce(t);
}

__device__ __forceinline__ fq_t fq_sqr(const fq_t& a) { return fq_mul(a, a); }

// ---- XYZZ arithmetic (formulas of Bernstein-Lange's database, a = 0) ----

__device__ __forceinline__ xyzz_t xyzz_inf() {
    xyzz_t p;
#pragma unroll
    for (int i = 0; i < 6; i++) p.x.l[i] = p.y.l[i] = p.zz.l[i] = p.zzz.l[i] = 0;
    return p;
}

__device__ __forceinline__ bool xyzz_is_inf(const xyzz_t& p) { return fq_is_zero(p.zz); }

// 2 * (x, y) for an affine point (mdbl-2008-s-1)
__device__ xyzz_t affine_dbl(const fq_t& x, const fq_t& y) {
    fq_t u = fq_add(y, y), v = fq_sqr(u), w = fq_mul(u, v), s = fq_mul(x, v);
    fq_t x2 = fq_sqr(x), m = fq_add(fq_add(x2, x2), x2);
    xyzz_t r;
    r.x = fq_sub(fq_sqr(m), fq_add(s, s));
    r.y = fq_sub(fq_mul(m, fq_sub(s, r.x)), fq_mul(w, y));
    r.zz = v;
    r.zzz = w;
    return r;
}

// 2 * p (dbl-2008-s-1)
__device__ xyzz_t xyzz_dbl(const xyzz_t& p) {
    if (xyzz_is_inf(p)) return p;
    fq_t u = fq_add(p.y, p.y), v = fq_sqr(u), w = fq_mul(u, v), s = fq_mul(p.x, v);
    fq_t x2 = fq_sqr(p.x), m = fq_add(fq_add(x2, x2), x2);
    xyzz_t r;
    r.x = fq_sub(fq_sqr(m), fq_add(s, s));
    r.y = fq_sub(fq_mul(m, fq_sub(s, r.x)), fq_mul(w, p.y));
    r.zz = fq_mul(v, p.zz);
    r.zzz = fq_mul(w, p.zzz);
    return r;
}

// p + (x, y) for an affine point, (x, y) not infinity (madd-2008-s)
__device__ xyzz_t xyzz_add_affine(const xyzz_t& p, const fq_t& x, const fq_t& y) {
    if (xyzz_is_inf(p)) {
        xyzz_t r;
        r.x = x;
        r.y = y;
        r.zz = r.zzz = fq_t{{0x760900000002fffdull, 0xebf4000bc40c0002ull, 0x5f48985753c758baull,
                             0x77ce585370525745ull, 0x5c071a97a256ec6dull, 0x15f65ec3fa80e493ull}};  // 1 (Montgomery)
        return r;
    }
    fq_t u2 = fq_mul(x, p.zz), s2 = fq_mul(y, p.zzz);
    fq_t pp_ = fq_sub(u2, p.x), r_ = fq_sub(s2, p.y);
    if (fq_is_zero(pp_)) return fq_is_zero(r_) ? affine_dbl(x, y) : xyzz_inf();
    fq_t pp = fq_sqr(pp_), ppp = fq_mul(pp_, pp), q = fq_mul(p.x, pp);
    xyzz_t o;
    o.x = fq_sub(fq_sub(fq_sqr(r_), ppp), fq_add(q, q));
    o.y = fq_sub(fq_mul(r_, fq_sub(q, o.x)), fq_mul(p.y, ppp));
    o.zz = fq_mul(p.zz, pp);
    o.zzz = fq_mul(p.zzz, ppp);
    return o;
}

// p + q (add-2008-s)
__device__ xyzz_t xyzz_add(const xyzz_t& p, const xyzz_t& q) {
    if (xyzz_is_inf(p)) return q;
    if (xyzz_is_inf(q)) return p;
    fq_t u1 = fq_mul(p.x, q.zz), u2 = fq_mul(q.x, p.zz);
    fq_t s1 = fq_mul(p.y, q.zzz), s2 = fq_mul(q.y, p.zzz);
    fq_t pp_ = fq_sub(u2, u1), r_ = fq_sub(s2, s1);
    if (fq_is_zero(pp_)) return fq_is_zero(r_) ? xyzz_dbl(p) : xyzz_inf();
    fq_t pp = fq_sqr(pp_), ppp = fq_mul(pp_, pp), qq = fq_mul(u1, pp);
    xyzz_t o;
    o.x = fq_sub(fq_sub(fq_sqr(r_), ppp), fq_add(qq, qq));
    o.y = fq_sub(fq_mul(r_, fq_sub(qq, o.x)), fq_mul(s1, ppp));
    o.zz = fq_mul(fq_mul(p.zz, q.zz), pp);
    o.zzz = fq_mul(fq_mul(p.zzz, q.zzz), ppp);
    return o;
}

__device__ __forceinline__ fq_t fq_load(const u64* v) {
    fq_t a;
#pragma unroll
    for (int i = 0; i < 6; i++) a.l[i] = v[i];
    return a;
}

__device__ __forceinline__ void fq_store(u64* v, const fq_t& a) {
#pragma unroll
    for (int i = 0; i < 6; i++) v[i] = a.l[i];
}

__device__ __forceinline__ void xyzz_store(u64* v, const xyzz_t& p) {
    fq_store(v, p.x); fq_store(v + 6, p.y); fq_store(v + 12, p.zz); fq_store(v + 18, p.zzz);
}

__device__ __forceinline__ xyzz_t xyzz_load(const u64* v) {
    xyzz_t p;
    p.x = fq_load(v); p.y = fq_load(v + 6); p.zz = fq_load(v + 12); p.zzz = fq_load(v + 18);
    return p;
}

// ---- kernels ----

// xy-LE canonical coordinates (12 limbs a point) -> Montgomery form, in place.
extern "C" __global__ void g1_to_montgomery(u64* pts, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fq_t r2 = fq_load(FQ_R2);
    fq_store(pts + 12 * i, fq_mul(fq_load(pts + 12 * i), r2));
    fq_store(pts + 12 * i + 6, fq_mul(fq_load(pts + 12 * i + 6), r2));
}

// Signed c-bit digit of window w of the canonical scalar s (4 limbs); carry in/out.
__device__ __forceinline__ int window_digit(const u64* s, int w, int c, int& carry) {
    int bit = w * c, limb = bit >> 6, shift = bit & 63;
    u64 v = limb < 4 ? s[limb] >> shift : 0;
    if (shift && limb + 1 < 4) v |= s[limb + 1] << (64 - shift);
    int d = (int)(v & ((1ull << c) - 1)) + carry;
    if (d > (1 << (c - 1))) { d -= 1 << c; carry = 1; } else carry = 0;
    return d;
}

__device__ __forceinline__ void canonical_scalar(const u32* scalars, u64 i, u64* s) {
    const fr_t one = {{1, 0, 0, 0, 0, 0, 0, 0}};  // times R^-1: out of Montgomery form
    fr_t v = fr_mul(fr_load(scalars, i), one);
#pragma unroll
    for (int k = 0; k < 4; k++) s[k] = ((u64)v.w[2 * k + 1] << 32) | v.w[2 * k];
}

// counts[w * (nb + 1) + |d|] += 1 for every non-zero digit (nb = 2^(c-1) buckets a window)
extern "C" __global__ void msm_count(const u32* scalars, u64 n, int c, int nwin, u32* counts) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u64 s[4];
    canonical_scalar(scalars, i, s);
    int carry = 0, nb = 1 << (c - 1);
    for (int w = 0; w < nwin; w++) {
        int d = window_digit(s, w, c, carry);
        if (d) atomicAdd(&counts[w * (nb + 1) + (d < 0 ? -d : d)], 1u);
    }
}

// Place each (point, sign) into its bucket's slice: cursor starts at the slices' offsets.
extern "C" __global__ void msm_scatter(const u32* scalars, u64 n, int c, int nwin, u32* cursor,
                                       u32* entries) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u64 s[4];
    canonical_scalar(scalars, i, s);
    int carry = 0, nb = 1 << (c - 1);
    for (int w = 0; w < nwin; w++) {
        int d = window_digit(s, w, c, carry);
        if (d) {
            u32 pos = atomicAdd(&cursor[w * (nb + 1) + (d < 0 ? -d : d)], 1u);
            entries[pos] = (u32)i | (d < 0 ? 0x80000000u : 0u);
        }
    }
}

// One thread a bucket: sum its points (negated where the digit was negative).
extern "C" __global__ void msm_accumulate(const u64* pts, const u32* entries, const u32* offsets,
                                          const u32* counts, int nb, int nwin, u64* buckets) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nwin * nb) return;
    int w = t / nb, b = t % nb + 1, slot = w * (nb + 1) + b;
    u32 start = offsets[slot], end = start + counts[slot];
    xyzz_t acc = xyzz_inf();
    for (u32 k = start; k < end; k++) {
        u32 e = entries[k];
        const u64* p = pts + 12ull * (e & 0x7fffffffu);
        fq_t x = fq_load(p), y = fq_load(p + 6);
        if (fq_is_zero(x) && fq_is_zero(y)) continue;  // infinity in the table
        acc = xyzz_add_affine(acc, x, (e >> 31) ? fq_neg(y) : y);
    }
    xyzz_store(buckets + 24ull * t, acc);
}

// Bucket reduction in chunks: thread (w, k) takes buckets lo..hi-1 (numbered from 1) and
// returns sum_b b * B_b over them as running sums plus (lo - 1) * (sum of B_b).
extern "C" __global__ void msm_reduce(const u64* buckets, int nb, int nwin, int chunks, u64* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nwin * chunks) return;
    int w = t / chunks, k = t % chunks, per = (nb + chunks - 1) / chunks;
    int lo = 1 + k * per, hi = min(nb + 1, lo + per);
    xyzz_t running = xyzz_inf(), acc = xyzz_inf();
    for (int b = hi - 1; b >= lo; b--) {
        running = xyzz_add(running, xyzz_load(buckets + 24ull * (w * nb + b - 1)));
        acc = xyzz_add(acc, running);
    }
    // acc holds sum (b - lo + 1) B_b; add (lo - 1) * running by double-and-add.
    xyzz_t extra = xyzz_inf();
    for (int bit = 31 - __clz(max(lo - 1, 1)); bit >= 0 && lo > 1; bit--) {
        extra = xyzz_dbl(extra);
        if (((lo - 1) >> bit) & 1) extra = xyzz_add(extra, running);
    }
    xyzz_store(out + 24ull * t, xyzz_add(acc, extra));
}

// One thread a window: the sum of its chunks.
extern "C" __global__ void msm_window_sum(const u64* chunk_sums, int chunks, int nwin, u64* out) {
    int w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= nwin) return;
    xyzz_t acc = xyzz_inf();
    for (int k = 0; k < chunks; k++) acc = xyzz_add(acc, xyzz_load(chunk_sums + 24ull * (w * chunks + k)));
    xyzz_store(out + 24ull * w, acc);
}
