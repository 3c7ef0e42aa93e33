// The base field Fq of BLS12-381 (q < 2^381), 12 little-endian 32-bit words an element,
// Montgomery form (R = 2^384), fully reduced; the arithmetic is mont.cuh's. In memory an
// element is 6 u64 limbs, the layout of prover/curve.py's xy-LE encoding.
#ifndef PROOFFLOW_FQ_CUH
#define PROOFFLOW_FQ_CUH

#include "mont.cuh"

// q's words; -q^-1 mod 2^32 = 0xfffcfffd
typedef mont_t<12, 0xfffcfffdu, 0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u,
               0x6730d2a0u, 0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au,
               0x1a0111eau> fq_t;

#define FQ_ONE_WORDS 0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu, 0x53c758bau, 0x5f489857u, \
                     0x70525745u, 0x77ce5853u, 0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u  // R mod q
#define FQ_R2_WORDS 0x1c341746u, 0xf4df1f34u, 0x09d104f1u, 0x0a76e6a6u, 0x4c95b6d5u, 0x8de5476cu, \
                    0x939d83c0u, 0x67eb88a9u, 0xb519952du, 0x9a793e85u, 0x92cae3aau, 0x11988fe5u  // R^2 mod q

PF_INLINE fq_t fq_one() { return fq_t{{FQ_ONE_WORDS}}; }  // R mod q: 1 in Montgomery form

// canonical -> Montgomery (times R^2 / R); back is from_mont()
PF_INLINE fq_t fq_to_mont(const fq_t& a) { return a * fq_t{{FQ_R2_WORDS}}; }

// Word i of q - 2, the inversion's exponent (q's words but the lowest), without an array:
// a run-time index into a register array would put it in local memory.
PF_INLINE u32 fq_inv_exponent_word(int i) {
    return i == 0 ? 0xffffaaa9u : i == 1 ? 0xb9feffffu : i == 2 ? 0xb153ffffu : i == 3 ? 0x1eabfffeu
         : i == 4 ? 0xf6b0f624u : i == 5 ? 0x6730d2a0u : i == 6 ? 0xf38512bfu : i == 7 ? 0x64774b84u
         : i == 8 ? 0x434bacd7u : i == 9 ? 0x4b1ba7b6u : i == 10 ? 0x397fe69au : 0x1a0111eau;
}

// a^-1 = a^(q-2) (Fermat; 0 for a = 0): square and multiply over the exponent's bits from
// the top. The exponent is the same for every thread, so the branch never diverges.
PF_HD inline fq_t fq_inv(const fq_t& a) {
    fq_t r = fq_one();
    for (int i = 11; i >= 0; i--) {
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

// Loads and stores by 16 bytes: an element is three uint4.
PF_INLINE fq_t fq_from(uint4 a, uint4 b, uint4 c) {
    return fq_t{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w}};
}

PF_INLINE fq_t fq_load(const u64* v) {
    const uint4* p = reinterpret_cast<const uint4*>(v);
    return fq_from(p[0], p[1], p[2]);
}

PF_INLINE void fq_store(u64* v, const fq_t& a) {
    uint4* p = reinterpret_cast<uint4*>(v);
    p[0] = make_uint4(a.w[0], a.w[1], a.w[2], a.w[3]);
    p[1] = make_uint4(a.w[4], a.w[5], a.w[6], a.w[7]);
    p[2] = make_uint4(a.w[8], a.w[9], a.w[10], a.w[11]);
}

#endif  // PROOFFLOW_FQ_CUH
