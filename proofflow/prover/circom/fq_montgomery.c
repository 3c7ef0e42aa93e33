/* A curve's base field Fq, N x 64-bit little-endian limbs: the conversion between the
 * standard form of proofflow's point tables and the Montgomery form (R = 2^(64N)) of
 * snarkjs's zkeys, over whole arrays of coordinates. A Montgomery product by R^2 mod q
 * converts to the Montgomery form, one by 1 converts back. The curve's constants come as
 * -D defines (proofflow.prover.native.field_defines): one library a curve. */
#include <stdint.h>
#include <string.h>

#if !defined(FQ_LIMBS) || !defined(FQ_MODULUS) || !defined(FQ_INV)
#error "compile with a curve's Fq constants: FQ_LIMBS, FQ_MODULUS, FQ_INV"
#endif

typedef unsigned __int128 u128;

#define N FQ_LIMBS
static const uint64_t Q[N] = {FQ_MODULUS};
static const uint64_t QINV = FQ_INV; /* -q^-1 mod 2^64 */

static inline int geq_q(const uint64_t *t) {
    for (int i = N - 1; i >= 0; i--) {
        if (t[i] > Q[i]) return 1;
        if (t[i] < Q[i]) return 0;
    }
    return 1;
}

/* a * b / R mod q for a, b < q (CIOS). q < 2^(64N - 1), so the result before the last
 * subtraction is below 2q and fits the N words. */
static inline void mont_mul(const uint64_t *a, const uint64_t *b, uint64_t *out) {
    uint64_t t[N + 2] = {0};
    for (int i = 0; i < N; i++) {
        u128 c = 0;
        for (int j = 0; j < N; j++) {
            c += (u128)a[j] * b[i] + t[j];
            t[j] = (uint64_t)c;
            c >>= 64;
        }
        c += t[N];
        t[N] = (uint64_t)c;
        t[N + 1] = (uint64_t)(c >> 64);
        uint64_t m = t[0] * QINV;
        c = ((u128)m * Q[0] + t[0]) >> 64;
        for (int j = 1; j < N; j++) {
            c += (u128)m * Q[j] + t[j];
            t[j - 1] = (uint64_t)c;
            c >>= 64;
        }
        c += t[N];
        t[N - 1] = (uint64_t)c;
        t[N] = t[N + 1] + (uint64_t)(c >> 64);
    }
    if (geq_q(t)) {
        u128 borrow = 0;
        for (int i = 0; i < N; i++) {
            u128 d = (u128)t[i] - Q[i] - borrow;
            t[i] = (uint64_t)d;
            borrow = (d >> 64) & 1;
        }
    }
    memcpy(out, t, sizeof(uint64_t) * N);
}

/* out[i] = in[i] * k / R mod q for n coordinates. Returns the index of the first input
 * not below q (its output is left unspecified), or -1 when all are. */
int64_t fq_mont_mul_by(const uint64_t *in, const uint64_t *k, uint64_t *out, int64_t n) {
    int64_t first_bad = n;
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (n > 16384)
    for (int64_t i = 0; i < n; i++) {
        if (geq_q(in + N * i)) {
            if (i < first_bad) first_bad = i;
            continue;
        }
        mont_mul(in + N * i, k, out + N * i);
    }
    return first_bad == n ? -1 : first_bad;
}
