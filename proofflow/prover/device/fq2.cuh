// Fq2 = Fq[u]/(u^2 + 1), the field of G2's coordinates: c0 + c1*u, each part in Montgomery
// form. In memory c0 then c1 (12 u64 limbs on BLS12-381), the order of prover/points.py's
// xy-LE encoding.
#ifndef PROOFFLOW_FQ2_CUH
#define PROOFFLOW_FQ2_CUH

#include "fq.cuh"

#if PF_FQ2_NON_RESIDUE != -1
#error "the formulas below take u^2 = -1: a curve's Fq2 of another non-residue needs its own"
#endif

struct fq2_t {
    fq_t c0, c1;
    static constexpr int U64 = 2 * fq_t::U64;  // u64 limbs in memory
};

PF_INLINE bool fq2_is_zero(const fq2_t& a) { return a.c0.is_zero() && a.c1.is_zero(); }

PF_INLINE fq2_t fq2_add(const fq2_t& a, const fq2_t& b) { return fq2_t{a.c0 + b.c0, a.c1 + b.c1}; }

PF_INLINE fq2_t fq2_sub(const fq2_t& a, const fq2_t& b) { return fq2_t{a.c0 - b.c0, a.c1 - b.c1}; }

PF_INLINE fq2_t fq2_neg(const fq2_t& a) { return fq2_t{-a.c0, -a.c1}; }

// Karatsuba: three Fq products. (a0 + a1 u)(b0 + b1 u) = a0 b0 - a1 b1 + (a0 b1 + a1 b0) u
PF_INLINE fq2_t fq2_mul(const fq2_t& a, const fq2_t& b) {
    fq_t v0 = fq_mul(a.c0, b.c0), v1 = fq_mul(a.c1, b.c1);
    fq_t s = fq_mul(a.c0 + a.c1, b.c0 + b.c1);
    return fq2_t{v0 - v1, s - v0 - v1};
}

// Two Fq products: (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u
PF_INLINE fq2_t fq2_sqr(const fq2_t& a) {
    fq_t t = fq_mul(a.c0, a.c1);
    return fq2_t{fq_mul(a.c0 + a.c1, a.c0 - a.c1), t + t};
}

// (a0 + a1 u)^-1 = (a0 - a1 u) / (a0^2 + a1^2): one Fq inversion (0 for 0).
PF_HD inline fq2_t fq2_inv(const fq2_t& a) {
    fq_t t = fq_inv(a.c0.sqr() + a.c1.sqr());
    return fq2_t{a.c0 * t, -(a.c1 * t)};
}

PF_INLINE fq2_t fq2_one() { return fq2_t{fq_one(), fq_t{}}; }

PF_INLINE fq2_t fq2_to_mont(const fq2_t& a) { return fq2_t{fq_to_mont(a.c0), fq_to_mont(a.c1)}; }

PF_INLINE fq2_t fq2_from_mont(const fq2_t& a) { return fq2_t{a.c0.from_mont(), a.c1.from_mont()}; }

PF_INLINE fq2_t fq2_load(const u64* v) { return fq2_t{fq_load(v), fq_load(v + fq_t::U64)}; }

PF_INLINE void fq2_store(u64* v, const fq2_t& a) {
    fq_store(v, a.c0);
    fq_store(v + fq_t::U64, a.c1);
}

#endif  // PROOFFLOW_FQ2_CUH
