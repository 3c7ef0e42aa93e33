// Montgomery arithmetic modulo m on N little-endian 32-bit words, one template for Fr
// (fr.cuh) and Fq (fq.cuh), after sppark's ff/mont_t.cuh: mont_t<N, M0, m's words...>,
// M0 = -m^-1 mod 2^32. Elements are fully reduced (< m) and m < 2^(32N - 1), which the
// additions (no carry out of N words) and the products (N + 1 words of accumulator) need.
// On the GPU the carry chains are loops of single PTX instructions; the host build (the
// CPU twin) computes the same values with common.cuh's portable routines. Compiled with
// PF_MUL_WIDE (source.py's "wide" variant), the GPU's products and squares are mul_wide
// instead: the same values, each 32 x 32 product one IMAD.WIDE.U32.X.
#ifndef PROOFFLOW_MONT_CUH
#define PROOFFLOW_MONT_CUH

#include "common.cuh"

// Word i of a word list, for the compile-time checks and constants below.
template <u32... W> PF_HD constexpr u32 pf_word(int i) {
    const u32 w[] = {W...};
    return w[i];
}

#ifdef PF_GPU
// One PTX instruction each. asm volatile keeps them in program order, nothing else writes
// the carry flag, so consecutive calls form one carry chain.
#define PF_PTX2(name, op)                                                       \
    __device__ __forceinline__ u32 name(u32 a, u32 b) {                         \
        u32 r;                                                                  \
        asm volatile(op " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));             \
        return r;                                                               \
    }
#define PF_PTX3(name, op)                                                       \
    __device__ __forceinline__ u32 name(u32 a, u32 b, u32 c) {                  \
        u32 r;                                                                  \
        asm volatile(op " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); \
        return r;                                                               \
    }
namespace ptx {
PF_PTX2(add_cc, "add.cc.u32")
PF_PTX2(addc_cc, "addc.cc.u32")
PF_PTX2(addc, "addc.u32")
PF_PTX2(sub_cc, "sub.cc.u32")
PF_PTX2(subc_cc, "subc.cc.u32")
PF_PTX2(subc, "subc.u32")
PF_PTX3(mad_lo_cc, "mad.lo.cc.u32")  // a * b + c
PF_PTX3(madc_lo_cc, "madc.lo.cc.u32")
PF_PTX3(mad_hi, "mad.hi.u32")
PF_PTX3(mad_hi_cc, "mad.hi.cc.u32")
PF_PTX3(madc_hi_cc, "madc.hi.cc.u32")
PF_PTX3(madc_hi, "madc.hi.u32")
}  // namespace ptx
#undef PF_PTX2
#undef PF_PTX3
#endif

// Carry chains written once for both builds: on the GPU the carry is the flag that the PTX
// .cc instructions share (cy is neither read nor written), on the host it is cy. As with
// ptx::, a chain's calls must not be interleaved with another chain's.
namespace chain {
PF_INLINE u32 add_cc(u32 a, u32 b, u32& cy) {
#ifdef PF_GPU
    return ptx::add_cc(a, b);
#else
    u64 s = (u64)a + b;
    cy = (u32)(s >> 32);
    return (u32)s;
#endif
}

PF_INLINE u32 addc_cc(u32 a, u32 b, u32& cy) {
#ifdef PF_GPU
    return ptx::addc_cc(a, b);
#else
    u64 s = (u64)a + b + cy;
    cy = (u32)(s >> 32);
    return (u32)s;
#endif
}

PF_INLINE u32 addc(u32 a, u32 b, u32 cy) {
#ifdef PF_GPU
    return ptx::addc(a, b);
#else
    return a + b + cy;
#endif
}

// (hi:lo) = a * b + (y:x), the carry in and out as above. A mad.lo and a madc.hi of the same
// product next to each other on a chain, into and from register pairs, become one
// IMAD.WIDE.U32.X (a 64-bit multiply-add with carry in and out) in ptxas's output, where
// operator*'s separate low and high chains cost an IMAD, an IMAD.HI and ~2 IADD3.X a product
// (docs/gpu-kernels.md).
PF_INLINE void mad_cc(u32& lo, u32& hi, u32 a, u32 b, u32 x, u32 y, u32& cy) {
#ifdef PF_GPU
    lo = ptx::mad_lo_cc(a, b, x);
    hi = ptx::madc_hi_cc(a, b, y);
#else
    u64 t = (u64)a * b + x, h = (t >> 32) + y;
    lo = (u32)t;
    hi = (u32)h;
    cy = (u32)(h >> 32);
#endif
}

PF_INLINE void madc_cc(u32& lo, u32& hi, u32 a, u32 b, u32 x, u32 y, u32& cy) {
#ifdef PF_GPU
    lo = ptx::madc_lo_cc(a, b, x);
    hi = ptx::madc_hi_cc(a, b, y);
#else
    u64 t = (u64)a * b + x + cy, h = (t >> 32) + y;
    lo = (u32)t;
    hi = (u32)h;
    cy = (u32)(h >> 32);
#endif
}

PF_INLINE void madc(u32& lo, u32& hi, u32 a, u32 b, u32 x, u32 y, u32 cy) {
#ifdef PF_GPU
    lo = ptx::madc_lo_cc(a, b, x);
    hi = ptx::madc_hi(a, b, y);
#else
    u64 t = (u64)a * b + x + cy;
    lo = (u32)t;
    hi = (u32)(t >> 32) + y;
#endif
}

PF_INLINE u32 sub_cc(u32 a, u32 b, u32& bw) {
#ifdef PF_GPU
    return ptx::sub_cc(a, b);
#else
    bw = a < b;
    return a - b;
#endif
}

PF_INLINE u32 subc_cc(u32 a, u32 b, u32& bw) {
#ifdef PF_GPU
    return ptx::subc_cc(a, b);
#else
    u64 d = (u64)a - b - bw;
    bw = (u32)(d >> 63);
    return (u32)d;
#endif
}

PF_INLINE u32 subc(u32 a, u32 b, u32 bw) {
#ifdef PF_GPU
    return ptx::subc(a, b);
#else
    return a - b - bw;
#endif
}
}  // namespace chain

template <int N, u32 M0, u32... MOD>
struct mont_t {
    static_assert(sizeof...(MOD) == N && N % 2 == 0, "N words, stored as N / 2 u64 limbs");
    static_assert(pf_word<MOD...>(N - 1) < 0x80000000u, "m < 2^(32N - 1)");
    static constexpr int U64 = N / 2;  // u64 limbs in memory

    u32 w[N];

    PF_INLINE bool is_zero() const {
        u32 d = 0;
#pragma unroll
        for (int i = 0; i < N; i++) d |= w[i];
        return d == 0;
    }

    friend PF_INLINE mont_t operator-(const mont_t& a) { return a.is_zero() ? a : mont_t{} - a; }

    PF_INLINE mont_t from_mont() const { return *this * mont_t{{1}}; }  // times 1/R

#ifdef PF_GPU
    friend PF_INLINE mont_t operator+(const mont_t& a, const mont_t& b) {
        u32 t[N];  // a + b < 2m < 2^(32N): no carry out
        t[0] = ptx::add_cc(a.w[0], b.w[0]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) t[i] = ptx::addc_cc(a.w[i], b.w[i]);
        t[N - 1] = ptx::addc(a.w[N - 1], b.w[N - 1]);
        return reduce_once(t);
    }

    friend PF_INLINE mont_t operator-(const mont_t& a, const mont_t& b) {
        const u32 m[N] = {MOD...};
        u32 t[N];
        t[0] = ptx::sub_cc(a.w[0], b.w[0]);
#pragma unroll
        for (int i = 1; i < N; i++) t[i] = ptx::subc_cc(a.w[i], b.w[i]);
        u32 mask = ptx::subc(0, 0), mm[N];  // all ones when a < b: then m is added back
#pragma unroll
        for (int i = 0; i < N; i++) mm[i] = m[i] & mask;
        mont_t r;
        r.w[0] = ptx::add_cc(t[0], mm[0]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) r.w[i] = ptx::addc_cc(t[i], mm[i]);
        r.w[N - 1] = ptx::addc(t[N - 1], mm[N - 1]);
        return r;
    }

    // a * b / 2^(32N) mod m, CIOS. Each row adds a * b_i and q * m to t < 2m, so stays below
    // 2^33 m <= 2^(32(N + 1)): N + 1 words never overflow.
    friend PF_INLINE mont_t operator*(const mont_t& a, const mont_t& b) {
#ifdef PF_MUL_WIDE
        return mul_wide(a, b);
#else
        u32 t[N + 1] = {};
#pragma unroll
        for (int i = 0; i < N; i++) {
            mac_lo(t, a.w, b.w[i]);
            mac_hi(t, a.w, b.w[i]);
            redc_row(t);
        }
        return reduce_once(t);
#endif
    }

    // a^2 / 2^(32N) mod m: the 2N-word square from the cross products (doubled) and the
    // squares, then a reduction of its low half only: REDC(low) <= m and high < m^2 / R < m,
    // so their sum is < 2m.
    PF_INLINE mont_t sqr() const {
#ifdef PF_MUL_WIDE
        return mul_wide(*this, *this);
#else
        u32 r[2 * N] = {};
#pragma unroll
        for (int i = 0; i < N - 1; i++) {  // row i: a[j] * a[i] for j > i, at word i + j
            mac_lo(r + 2 * i + 1, w + i + 1, w[i], N - 1 - i);
            mac_hi(r + 2 * i + 1, w + i + 1, w[i], N - 1 - i);
        }
        r[0] = ptx::add_cc(r[0], r[0]);
#pragma unroll
        for (int i = 1; i < 2 * N - 1; i++) r[i] = ptx::addc_cc(r[i], r[i]);
        r[2 * N - 1] = ptx::addc(r[2 * N - 1], r[2 * N - 1]);
        r[0] = ptx::mad_lo_cc(w[0], w[0], r[0]);
        r[1] = ptx::madc_hi_cc(w[0], w[0], r[1]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) {
            r[2 * i] = ptx::madc_lo_cc(w[i], w[i], r[2 * i]);
            r[2 * i + 1] = ptx::madc_hi_cc(w[i], w[i], r[2 * i + 1]);
        }
        r[2 * N - 2] = ptx::madc_lo_cc(w[N - 1], w[N - 1], r[2 * N - 2]);
        r[2 * N - 1] = ptx::madc_hi(w[N - 1], w[N - 1], r[2 * N - 1]);
        u32 t[N + 1];
#pragma unroll
        for (int i = 0; i < N; i++) t[i] = r[i];
        t[N] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) redc_row(t);
        t[0] = ptx::add_cc(t[0], r[N]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) t[i] = ptx::addc_cc(t[i], r[N + i]);
        t[N - 1] = ptx::addc(t[N - 1], r[2 * N - 1]);
        return reduce_once(t);
#endif
    }

    // The 64-bit CIOS over N / 2 limbs, with __umul64hi for the high halves. The GPU
    // multiplies 32x32 natively and emulates 64x64, so this takes more instructions than
    // operator*: kept for fr.cuh's FR_MUL64 variant, to measure the difference.
    static __device__ __forceinline__ mont_t mul64(const mont_t& x, const mont_t& y) {
        constexpr int K = N / 2;
        // -m^-1 mod 2^64: one Newton step lifts the inverse -M0 from 2^32 to 2^64.
        constexpr u64 m0 = ((u64)pf_word<MOD...>(1) << 32) | pf_word<MOD...>(0), inv = (u32)(0u - M0);
        constexpr u64 M0_64 = 0 - inv * (2 - m0 * inv);
        const u32 m32[N] = {MOD...};
        u64 p[K], a[K], b[K], t[K + 2] = {};
#pragma unroll
        for (int i = 0; i < K; i++) {
            p[i] = ((u64)m32[2 * i + 1] << 32) | m32[2 * i];
            a[i] = ((u64)x.w[2 * i + 1] << 32) | x.w[2 * i];
            b[i] = ((u64)y.w[2 * i + 1] << 32) | y.w[2 * i];
        }
#pragma unroll
        for (int i = 0; i < K; i++) {
            u64 c = 0;
#pragma unroll
            for (int j = 0; j < K; j++) t[j] = mac64(t[j], a[j], b[i], c);
            t[K] += c;
            t[K + 1] = t[K] < c;
            u64 q = t[0] * M0_64;
            c = 0;
            mac64(t[0], q, p[0], c);
#pragma unroll
            for (int j = 1; j < K; j++) t[j - 1] = mac64(t[j], q, p[j], c);
            t[K - 1] = t[K] + c;
            t[K] = t[K + 1] + (t[K - 1] < c);
        }
        u32 r[N];
#pragma unroll
        for (int i = 0; i < K; i++) {
            r[2 * i] = (u32)t[i];
            r[2 * i + 1] = (u32)(t[i] >> 32);
        }
        return reduce_once(r);  // t < 2m < 2^(32N), so t[K] is 0 here
    }

private:
    // t[0..n-1] += lo(a[j] * b) for j < n, the carry added into t[n]
    static __device__ __forceinline__ void mac_lo(u32* t, const u32* a, u32 b, int n = N) {
        t[0] = ptx::mad_lo_cc(a[0], b, t[0]);
#pragma unroll
        for (int j = 1; j < n; j++) t[j] = ptx::madc_lo_cc(a[j], b, t[j]);
        t[n] = ptx::addc(t[n], 0);
    }

    // t[1..n] += hi(a[j] * b) for j < n; the callers' bounds leave no carry out of t[n]
    static __device__ __forceinline__ void mac_hi(u32* t, const u32* a, u32 b, int n = N) {
        if (n == 1) {
            t[1] = ptx::mad_hi(a[0], b, t[1]);
            return;
        }
        t[1] = ptx::mad_hi_cc(a[0], b, t[1]);
#pragma unroll
        for (int j = 1; j < n - 1; j++) t[j + 1] = ptx::madc_hi_cc(a[j], b, t[j + 1]);
        t[n] = ptx::madc_hi(a[n - 1], b, t[n]);
    }

    // One Montgomery reduction step of the N + 1 words t: t = (t + q * m) / 2^32, with q
    // chosen so that the low word becomes 0.
    static __device__ __forceinline__ void redc_row(u32* t) {
        const u32 m[N] = {MOD...};
        u32 q = t[0] * M0;
        mac_lo(t, m, q);
        mac_hi(t, m, q);
#pragma unroll
        for (int j = 0; j < N; j++) t[j] = t[j + 1];
        t[N] = 0;
    }

    static __device__ __forceinline__ u64 mac64(u64 t, u64 a, u64 b, u64& carry) {  // t + a * b + carry
        u64 lo = a * b, hi = __umul64hi(a, b);
        lo += t;
        hi += lo < t;
        lo += carry;
        hi += lo < carry;
        carry = hi;
        return lo;
    }

#else  // the host build
    friend PF_INLINE mont_t operator+(const mont_t& a, const mont_t& b) {
        const u32 m[N] = {MOD...};
        mont_t r;
        mp_add_mod<N>(r.w, a.w, b.w, m);
        return r;
    }

    friend PF_INLINE mont_t operator-(const mont_t& a, const mont_t& b) {
        const u32 m[N] = {MOD...};
        mont_t r;
        mp_sub_mod<N>(r.w, a.w, b.w, m);
        return r;
    }

    friend PF_INLINE mont_t operator*(const mont_t& a, const mont_t& b) {
        const u32 m[N] = {MOD...};
        mont_t r;
        mp_mont_mul<N>(r.w, a.w, b.w, m, M0);
        return r;
    }

    PF_INLINE mont_t sqr() const { return *this * *this; }
#endif  // PF_GPU

public:
    // a * b / 2^(32N) mod m (CIOS) with each product's two words in one register pair of one
    // chain (chain::mad_cc). A row's products split by parity: a_j b_i for even j go to pairs
    // (j, j + 1) of e, which holds words 0..N-1 (e[k] = word k), those for odd j to pairs
    // (j - 1, j) of o, which holds words 1..N (o[k] = word k + 1); the same for q m_j.
    // Dividing by 2^32 makes o the aligned one and leaves e a word low (e[k] = word k - 1):
    // its word 0 (e[1]) is added to the new e[0], and as the next row's o it is read two
    // places up while the odd products accumulate into it. Bounds (a < m < 2^(32N - 1)): the
    // row's sum t + a b_i + q m < 2m + 2^33 m < 2^(32(N + 1)), so nothing carries out of
    // word N (o[N - 1]), and the divided t < 2m < 2^(32N); every partial sum is smaller.
    static PF_INLINE mont_t mul_wide(const mont_t& a, const mont_t& b) {
        const u32 m[N] = {MOD...};
        u32 x[N], y[N], cy;  // e and o, trading places every row
#pragma unroll
        for (int i = 0; i < N; i++) {
            u32* e = i % 2 ? y : x;
            u32* o = i % 2 ? x : y;  // before this row: the old e, o[k] = word k - 1
            if (i == 0) {
#pragma unroll
                for (int j = 0; j < N; j += 2) {
                    u64 pe = (u64)a.w[j] * b.w[0], po = (u64)a.w[j + 1] * b.w[0];
                    e[j] = (u32)pe, e[j + 1] = (u32)(pe >> 32), o[j] = (u32)po, o[j + 1] = (u32)(po >> 32);
                }
            } else {
                e[0] = chain::add_cc(e[0], o[1], cy);  // word 0; its carry starts o's chain at word 1
#pragma unroll
                for (int j = 0; j < N - 2; j += 2)
                    chain::madc_cc(o[j], o[j + 1], a.w[j + 1], b.w[i], o[j + 2], o[j + 3], cy);
                chain::madc(o[N - 2], o[N - 1], a.w[N - 1], b.w[i], 0, 0, cy);
                mac_pairs(e, a.w, b.w[i], o[N - 1]);
            }
            u32 q = e[0] * M0;
            chain::mad_cc(o[0], o[1], m[1], q, o[0], o[1], cy);
#pragma unroll
            for (int j = 2; j < N - 2; j += 2) chain::madc_cc(o[j], o[j + 1], m[j + 1], q, o[j], o[j + 1], cy);
            chain::madc(o[N - 2], o[N - 1], m[N - 1], q, o[N - 2], o[N - 1], cy);
            mac_pairs(e, m, q, o[N - 1]);
        }
        // after the last row o (x: N is even) holds words 0..N-1 and e words -1..N-2
        u32 t[N];
        t[0] = chain::add_cc(x[0], y[1], cy);
#pragma unroll
        for (int k = 1; k < N - 1; k++) t[k] = chain::addc_cc(x[k], y[k + 1], cy);
        t[N - 1] = chain::addc(x[N - 1], 0, cy);
        return reduce_once(t);
    }

private:
    // e[0..N-1] += (a_j b) 2^(32j) over even j, the carry out added to top
    static PF_INLINE void mac_pairs(u32* e, const u32* a, u32 b, u32& top) {
        u32 cy;
        chain::mad_cc(e[0], e[1], a[0], b, e[0], e[1], cy);
#pragma unroll
        for (int j = 2; j < N; j += 2) chain::madc_cc(e[j], e[j + 1], a[j], b, e[j], e[j + 1], cy);
        top = chain::addc(top, 0, cy);
    }

    // t < 2m  ->  t mod m (one conditional subtraction)
    static PF_INLINE mont_t reduce_once(const u32* t) {
        const u32 m[N] = {MOD...};
        u32 r[N], bw;
        r[0] = chain::sub_cc(t[0], m[0], bw);
#pragma unroll
        for (int i = 1; i < N; i++) r[i] = chain::subc_cc(t[i], m[i], bw);
        u32 borrow = chain::subc(0, 0, bw);
        mont_t out;
#pragma unroll
        for (int i = 0; i < N; i++) out.w[i] = borrow ? t[i] : r[i];  // borrow: t was already < m
        return out;
    }
};

#endif  // PROOFFLOW_MONT_CUH
