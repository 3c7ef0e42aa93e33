/* A curve's base field Fq, N x 64-bit little-endian limbs: the conversion between the
 * standard form of proofflow's point tables and the Montgomery form (R = 2^(64N)) of
 * snarkjs's zkeys, over whole arrays of coordinates. A Montgomery product by R^2 mod q
 * converts to the Montgomery form, one by 1 converts back. The curve's constants come as
 * -D defines (proofflow.prover.native.field_defines): one library a curve. */
#include <stdint.h>

#if !defined(FQ_LIMBS) || !defined(FQ_MODULUS) || !defined(FQ_INV) || !defined(FQ_ONE) || !defined(FQ_R2)
#error "compile with a curve's Fq constants (proofflow.prover.native.field_defines)"
#endif

#include "../native/fq.h"

/* out[i] = in[i] * k / R mod q for n coordinates. Returns the index of the first input
 * not below q (its output is left unspecified), or -1 when all are. */
int64_t fq_mont_mul_by(const uint64_t *in, const uint64_t *k, uint64_t *out, int64_t n) {
    int64_t first_bad = n;
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (n > 16384)
    for (int64_t i = 0; i < n; i++) {
        if (fq_geq_q(in + N * i)) {
            if (i < first_bad) first_bad = i;
            continue;
        }
        fq_mul(in + N * i, k, out + N * i);
    }
    return first_bad == n ? -1 : first_bad;
}
