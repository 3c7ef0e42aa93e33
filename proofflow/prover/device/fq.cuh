// A curve's base field Fq (q < 2^(32N - 1)), N little-endian 32-bit words an element (N =
// PF_FQ_WORDS, 12 on BLS12-381), Montgomery form (R = 2^(32N)), fully reduced; the
// arithmetic is mont.cuh's, the constants the curve's (PF_FQ_*: source.py's generated
// header). In memory an element is N / 2 u64 limbs, the layout of prover/points.py's xy-LE
// encoding.
#ifndef PROOFFLOW_FQ_CUH
#define PROOFFLOW_FQ_CUH

#include "mont.cuh"

#if !defined(PF_FQ_WORDS) || PF_FQ_WORDS % 4
#error "compile with a curve's header (source.curve_header): an Fq element of whole uint4s"
#endif

typedef mont_t<PF_FQ_WORDS, PF_FQ_M0, PF_FQ_MODULUS> fq_t;

PF_INLINE fq_t fq_one() { return fq_t{{PF_FQ_ONE}}; }  // R mod q: 1 in Montgomery form

// canonical -> Montgomery (times R^2 / R); back is from_mont()
PF_INLINE fq_t fq_to_mont(const fq_t& a) { return a * fq_t{{PF_FQ_R2}}; }

// Word i of q - 2, the inversion's exponent, without an array: a run-time index into a
// register array would put it in local memory.
PF_INLINE u32 fq_inv_exponent_word(int i) { return PF_FQ_INV_EXPONENT_WORD(i); }

// a^-1 = a^(q-2) (Fermat; 0 for a = 0): square and multiply over the exponent's bits from
// the top. The exponent is the same for every thread, so the branch never diverges.
PF_HD inline fq_t fq_inv(const fq_t& a) {
    fq_t r = fq_one();
    for (int i = PF_FQ_WORDS - 1; i >= 0; i--) {
        u32 e = fq_inv_exponent_word(i);
        for (int b = 31; b >= 0; b--) {
            r = r.sqr();
            if ((e >> b) & 1) r = r * a;
        }
    }
    return r;
}

// The products the curve formulas (curve.cuh, fq2.cuh) take. Compiled with PF_FIELD_CALL
// (source.py's "call" variant) they are functions, called rather than inlined: a G1 mixed
// addition's ten products are then one body of ~400 instructions instead of ~4000 in the
// accumulation loop, which the H200's profile found stalled on instruction fetch.
#ifdef PF_FIELD_CALL
PF_NOINLINE PF_HD fq_t fq_mul(fq_t a, fq_t b) { return a * b; }
PF_NOINLINE PF_HD fq_t fq_sqr(fq_t a) { return a.sqr(); }
#else
PF_INLINE fq_t fq_mul(const fq_t& a, const fq_t& b) { return a * b; }
PF_INLINE fq_t fq_sqr(const fq_t& a) { return a.sqr(); }
#endif

// Loads and stores by 16 bytes: an element is PF_FQ_WORDS / 4 uint4 (three on BLS12-381),
// each passed by value, so read whole (the header's PF_FQ_UINT4* lists spell them out).
PF_INLINE fq_t fq_from(PF_FQ_UINT4_PARAMS) { return fq_t{{PF_FQ_UINT4_WORDS}}; }

PF_INLINE fq_t fq_load(const u64* v) {
    const uint4* p = reinterpret_cast<const uint4*>(v);
    return fq_from(PF_FQ_UINT4S(p));
}

PF_INLINE void fq_store(u64* v, const fq_t& a) {
    uint4* p = reinterpret_cast<uint4*>(v);
    PF_FQ_STORE_UINT4S(p, a);
}

#endif  // PROOFFLOW_FQ_CUH
