// A key table's compressed points (proofflow/prover/native/compressed.py: the curve library's
// encoding, x and flags) made the affine points the MSM kernels read (curve.cuh: x || y,
// Montgomery, (0, 0) at infinity) on the device, as the key is uploaded (device/decompress.py).
// One thread a point: its flags, x below q, then y = sqrt(x^3 + b), checked (y^2 = x^3 + b:
// the point is on the curve), y or -y by the flag. The algorithm is the CPU's
// (proofflow/prover/native/compressed.c, which says why it holds): in Fq a^((q+1)/4); in Fq2
// the complex method, d = sqrt(a0^2 + a1^2), t = (a0 + d) / 2 (a0 when 0), s = t^((q-3)/4),
// r = s t, l = s r (+-1), 1/r = s l, root r + (a1 / 2r) u when l = 1, else (a1 / 2r) + r u.
// A refused point's row and reason go to *bad (the least row wins: (row << 8) | reason); its
// output row is left unwritten.
//
// The encoding's constants (PF_COMPRESSED_*, PF_FLAG_*, the exponents, b) come with the
// module's text (source.compression_header), after the curve's header. The per-thread body is
// a template (PF_HD) that the CPU twin (tests/helpers/kernel_twin.cpp) runs in a loop.
#include "curve.cuh"

#if !defined(PF_COMPRESSED_BIG_ENDIAN) || !defined(PF_FLAG_INFINITY) || !defined(PF_FLAG_LARGER) \
    || !defined(PF_FLAG_MARKER) || !defined(PF_FQ_SQRT_EXPONENT_WORD) || !defined(PF_G1_B)
#error "compile decompress.cu with its compression header (source.compression_header)"
#endif

#define PF_FLAGS (PF_FLAG_INFINITY | PF_FLAG_LARGER | PF_FLAG_MARKER)
enum { DECOMPRESS_BAD_FLAGS = 1, DECOMPRESS_NOT_BELOW_Q = 2, DECOMPRESS_NOT_ON_CURVE = 3 };

PF_INLINE u32 pf_bswap(u32 v) {
#ifdef PF_GPU
    return __byte_perm(v, 0, 0x0123);
#else
    return __builtin_bswap32(v);
#endif
}

// a^e for the exponents of the square roots, 2-bit windows from the top (a, a^2, a^3 at hand:
// half the products of square and multiply, three elements more); the exponent is every
// thread's, so no branch diverges. E::word(i) is word i of e.
struct sqrt_exponent {  // (q + 1) / 4
    static PF_INLINE u32 word(int i) { return PF_FQ_SQRT_EXPONENT_WORD(i); }
};
struct sqrt_less_one_exponent {  // (q - 3) / 4
    static PF_INLINE u32 word(int i) { return PF_FQ_SQRT_LESS_ONE_EXPONENT_WORD(i); }
};

template <class E> PF_HD inline fq_t fq_pow_fixed(const fq_t& a) {
    fq_t a2 = a.sqr(), a3 = a2 * a, r = fq_one();
    for (int i = PF_FQ_WORDS - 1; i >= 0; i--) {
        u32 e = E::word(i);
        for (int b = 30; b >= 0; b -= 2) {
            r = r.sqr().sqr();
            u32 d = (e >> b) & 3;
            if (d == 1) r = r * a;
            else if (d == 2) r = r * a2;
            else if (d == 3) r = r * a3;
        }
    }
    return r;
}

PF_INLINE bool fq_eq(const fq_t& a, const fq_t& b) { return (a - b).is_zero(); }

// a > c as integers (their words, not field elements)
PF_INLINE bool words_above(const fq_t& a, const fq_t& c) {
    bool above = false, decided = false;
#pragma unroll
    for (int i = PF_FQ_WORDS - 1; i >= 0; i--) {
        above = decided ? above : a.w[i] > c.w[i];
        decided = decided || a.w[i] != c.w[i];
    }
    return above;
}

PF_INLINE bool below_q(const fq_t& a) { return words_above(fq_t{{PF_FQ_MODULUS}}, a); }

// ---- per field: what the body needs, an overload set each ----

PF_INLINE bool below_q(const fq2_t& a) { return below_q(a.c0) && below_q(a.c1); }

PF_INLINE bool f_eq(const fq_t& a, const fq_t& b) { return fq_eq(a, b); }
PF_INLINE bool f_eq(const fq2_t& a, const fq2_t& b) { return fq_eq(a.c0, b.c0) && fq_eq(a.c1, b.c1); }

// canonical y: the larger of y and -y (G2: c1 decides unless it is 0)
PF_INLINE bool f_larger(const fq_t& y) { return words_above(y, fq_t{{PF_FQ_HALF}}); }
PF_INLINE bool f_larger(const fq2_t& y) { return f_larger(y.c1.is_zero() ? y.c0 : y.c1); }

PF_INLINE fq_t f_sqrt(const fq_t& a) { return fq_pow_fixed<sqrt_exponent>(a); }

PF_HD inline fq2_t f_sqrt(const fq2_t& a) {
    const fq_t half{{PF_FQ_HALF_MONT}};
    fq_t d = f_sqrt(fq_mul(a.c0, a.c0) + fq_mul(a.c1, a.c1));
    fq_t t = fq_mul(a.c0 + d, half);
    if (t.is_zero()) t = a.c0;  // d = -a0: a1 = 0, and (a0 - d) / 2 = a0
    fq_t s = fq_pow_fixed<sqrt_less_one_exponent>(t);
    fq_t r = fq_mul(s, t), l = fq_mul(s, r);
    fq_t z = fq_mul(fq_mul(a.c1, fq_mul(s, l)), half);  // a1 / 2r
    return fq_eq(l, fq_one()) ? fq2_t{r, z} : fq2_t{z, r};
}

template <class F> PF_INLINE F curve_b();
template <> PF_INLINE fq_t curve_b<fq_t>() { return fq_t{{PF_G1_B}}; }
template <> PF_INLINE fq2_t curve_b<fq2_t>() { return fq2_t{fq_t{{PF_G2_B0}}, fq_t{{PF_G2_B1}}}; }

template <class F> PF_INLINE F f_from_words(const u32* w);
template <> PF_INLINE fq_t f_from_words<fq_t>(const u32* w) {
    fq_t a;
#pragma unroll
    for (int i = 0; i < PF_FQ_WORDS; i++) a.w[i] = w[i];
    return a;
}
template <> PF_INLINE fq2_t f_from_words<fq2_t>(const u32* w) {
    return fq2_t{f_from_words<fq_t>(w), f_from_words<fq_t>(w + PF_FQ_WORDS)};
}

// ---- the body: point i of the compressed rows `in` (F::U64 / 2 uint4 each) into row i of
// `out` (2 F::U64 u64 limbs: Montgomery when `mont`, else canonical, the CPU's xy-LE);
// 0, or the reason the point is refused ----

template <class F> PF_INLINE u32 decompress_body(const uint4* in, u64* out, u64 i, int mont) {
    constexpr int NW = 2 * F::U64;  // u32 words of x
    u32 w[NW], xw[NW];
    const uint4* p = in + (u64)(F::U64 / 2) * i;
#pragma unroll
    for (int t = 0; t < F::U64 / 2; t++) {
        uint4 v = pf_ldg(p + t);
        w[4 * t] = v.x, w[4 * t + 1] = v.y, w[4 * t + 2] = v.z, w[4 * t + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < NW; j++) xw[j] = PF_COMPRESSED_BIG_ENDIAN ? pf_bswap(w[NW - 1 - j]) : w[j];
    u32 flags = (xw[NW - 1] >> 24) & PF_FLAGS;
    xw[NW - 1] &= ~((u32)PF_FLAGS << 24);
    F x = f_from_words<F>(xw);
    u64* o = out + 2ull * F::U64 * i;
    if ((flags & PF_FLAG_MARKER) != PF_FLAG_MARKER) return DECOMPRESS_BAD_FLAGS;
    if (flags & PF_FLAG_INFINITY) {
        if ((flags & PF_FLAG_LARGER) || !f_is_zero(x)) return DECOMPRESS_BAD_FLAGS;
        f_store(o, f_zero<F>());
        f_store(o + F::U64, f_zero<F>());
        return 0;
    }
    if (!below_q(x)) return DECOMPRESS_NOT_BELOW_Q;
    F xm = f_to_mont(x);
    F a = f_add(f_mul(f_sqr(xm), xm), curve_b<F>());
    F y = f_sqrt(a);
    if (!f_eq(f_sqr(y), a)) return DECOMPRESS_NOT_ON_CURVE;
    F yc = f_from_mont(y);
    bool larger = (flags & PF_FLAG_LARGER) != 0;
    if (larger && f_is_zero(yc)) return DECOMPRESS_BAD_FLAGS;  // y = -y: the flag must be clear
    if (f_larger(yc) != larger) {
        y = f_neg(y);
        yc = f_neg(yc);
    }
    f_store(o, mont ? xm : x);
    f_store(o + F::U64, mont ? y : yc);
    return 0;
}

#ifdef __CUDACC__
// Rows first .. first + n - 1 of a table (its chunk in `in` and `out`); a refused row's index
// in the whole table, with its reason, into *bad (least wins).
#define DECOMPRESS_KERNEL(G, F)                                                                    \
    extern "C" __global__ void __launch_bounds__(128) decompress_##G(const uint4* in, u64* out, u64 n, \
                                                                    u64 first, int mont, u64* bad) { \
        u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;                                        \
        if (i >= n) return;                                                                        \
        u32 reason = decompress_body<F>(in, out, i, mont);                                         \
        if (reason) atomicMin(bad, ((first + i) << 8) | reason);                                   \
    }

#if defined(PF_GROUP_G1)
DECOMPRESS_KERNEL(g1, fq_t)
#elif defined(PF_GROUP_G2)
DECOMPRESS_KERNEL(g2, fq2_t)
#else
#error "compile decompress.cu with -DPF_GROUP_G1 or -DPF_GROUP_G2"
#endif
#endif  // __CUDACC__
