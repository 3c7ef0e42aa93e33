/* Compressed points of a curve's G1 (over Fq) and G2 (over Fq2 = Fq[u]/(u^2 + 1)), both
 * y^2 = x^3 + b, on the CPU: a key table's rows between the engine's xy-LE encoding (affine
 * canonical coordinates, FQ_LIMBS little-endian 64-bit limbs each, G2's c0 then c1; the point
 * at infinity all zeros) and the curve library's compressed encoding (descriptor.Compression:
 * x alone, little-endian or its bytes reversed, flags in the top bits of its most significant
 * byte). Whole tables a call, the rows spread over the cores (OpenMP).
 *
 * Decompression: x < q, then y = sqrt(x^3 + b), checked (y^2 = x^3 + b: the point is on the
 * curve), then y or -y by the flag. Square roots for q = 3 mod 4: in Fq a^((q+1)/4); in Fq2
 * the "complex method" (Adj and Rodriguez-Henriquez, Square root computation over even
 * extension fields, 2014): for a = a0 + a1 u, d = sqrt(a0^2 + a1^2) in Fq, t = (a0 + d) / 2
 * (a0 when that is 0), then one exponentiation s = t^((q-3)/4) gives r = s t = t^((q+1)/4),
 * l = s r = t^((q-1)/2) (1 when t is a square, -1 when not) and 1/r = s l: the root is
 * r + (a1 / 2r) u when l = 1, else (a1 / 2r) + r u (r^2 = -t then). Two exponentiations a G2
 * point, one a G1 point. The GPU's upload decompresses with the same algorithm
 * (proofflow/prover/device/decompress.cu), so the two agree bit for bit.
 *
 * The curve's constants come as -D defines (proofflow.prover.native.compressed.defines): Fq's
 * (FQ_*), R^2, 1/2 in Montgomery form, each group's b in Montgomery form, the exponents and
 * (q-1)/2 as limbs, the encoding's flags. One library a curve. */
#include <stdint.h>
#include <string.h>

#if !defined(FQ_LIMBS) || !defined(FQ_MODULUS) || !defined(FQ_INV) || !defined(FQ_ONE) || !defined(FQ_R2) \
    || !defined(FQ_HALF_MONT) || !defined(FQ_SQRT_EXP) || !defined(FQ_SQRT_EXP_LESS_ONE) || !defined(FQ_HALF) \
    || !defined(G1_B) || !defined(G2_B) || !defined(BIG_ENDIAN_X) || !defined(FLAG_INFINITY) \
    || !defined(FLAG_LARGER) || !defined(FLAG_MARKER)
#error "compile with a curve's constants (proofflow.prover.native.compressed.defines)"
#endif

#include "fq.h"

#define W (8 * N) /* bytes of an Fq element */
static const uint64_t HALF_M[N] = {FQ_HALF_MONT}; /* 1/2, Montgomery */
static const uint64_t SQRT_EXP[N] = {FQ_SQRT_EXP};           /* (q + 1) / 4 */
static const uint64_t SQRT_EXP_LESS_ONE[N] = {FQ_SQRT_EXP_LESS_ONE}; /* (q - 3) / 4 */
static const uint64_t HALF[N] = {FQ_HALF};   /* (q - 1) / 2: y is the larger of y, -y when above it */
static const uint64_t B1[N] = {G1_B};        /* Montgomery */
static const uint64_t B2[2 * N] = {G2_B};    /* Montgomery, c0 then c1 */
#define FLAGS (FLAG_INFINITY | FLAG_LARGER | FLAG_MARKER)

/* why a row is refused (compressed.py's REASONS) */
enum { OK = 0, BAD_FLAGS = 1, NOT_BELOW_Q = 2, NOT_ON_CURVE = 3 };

static void to_mont(const uint64_t *a, uint64_t *out) { fq_mul(a, FQ_R2_M, out); }

static void from_mont(const uint64_t *a, uint64_t *out) {
    static const uint64_t one[N] = {1};
    fq_mul(a, one, out);
}

/* ---- the curve equation's right side and square roots ---- */

/* x^3 + b (k = 1: G1 over Fq; k = 2: G2 over Fq2), Montgomery */
static void rhs(int k, const uint64_t *x, uint64_t *out) {
    uint64_t t[2 * N];
    if (k == 1) {
        fq_mul(x, x, t);
        fq_mul(t, x, t);
        fq_add(t, B1, out);
    } else {
        fq2_mul(x, x, t);
        fq2_mul(t, x, t);
        fq2_add(t, B2, out);
    }
}

/* whether y^2 = a: y the candidate root */
static int is_root(int k, const uint64_t *y, const uint64_t *a) {
    uint64_t t[2 * N];
    if (k == 1) {
        fq_mul(y, y, t);
        return fq_cmp(t, a) == 0;
    }
    fq2_mul(y, y, t);
    return fq_cmp(t, a) == 0 && fq_cmp(t + N, a + N) == 0;
}

/* A square root of a when a is a square (else a value that is_root refuses), Montgomery. */
static void fq_sqrt(const uint64_t *a, uint64_t *out) { fq_pow(a, SQRT_EXP, out); }

static void fq2_sqrt(const uint64_t *a, uint64_t *out) {
    uint64_t norm[N], d[N], t[N], s[N], r[N], l[N], inv[N], z[N];
    fq_mul(a, a, norm);
    fq_mul(a + N, a + N, t);
    fq_add(norm, t, norm);
    fq_sqrt(norm, d);
    fq_add(a, d, t);
    fq_mul(t, HALF_M, t);
    if (fq_is_zero(t)) memcpy(t, a, W); /* d = -a0: a1 = 0, and (a0 - d) / 2 = a0 */
    fq_pow(t, SQRT_EXP_LESS_ONE, s);
    fq_mul(s, t, r);
    fq_mul(s, r, l);
    fq_mul(s, l, inv);                /* 1 / r (0 when t is 0) */
    fq_mul(a + N, inv, z);
    fq_mul(z, HALF_M, z);             /* a1 / 2r */
    if (fq_cmp(l, FQ_ONE_M) == 0) {
        memcpy(out, r, W);
        memcpy(out + N, z, W);
    } else {
        memcpy(out, z, W);
        memcpy(out + N, r, W);
    }
}

/* whether canonical y is the larger of y and -y (G2: c1 decides unless 0) */
static int larger(int k, const uint64_t *y) {
    const uint64_t *top = k == 2 && !fq_is_zero(y + N) ? y + N : y;
    return fq_cmp(top, HALF) > 0;
}

/* ---- rows ---- */

/* x's k * N limbs from a compressed row, flags cleared; returns the flags */
static int read_x(int k, const uint8_t *row, uint64_t *x) {
    uint8_t b[2 * W];
    int w = k * W;
    for (int i = 0; i < w; i++) b[i] = BIG_ENDIAN_X ? row[w - 1 - i] : row[i];
    int flags = b[w - 1] & FLAGS;
    b[w - 1] &= (uint8_t)~FLAGS;
    memcpy(x, b, (size_t)w);
    return flags;
}

static void write_x(int k, const uint64_t *x, int flags, uint8_t *row) {
    uint8_t b[2 * W];
    int w = k * W;
    memcpy(b, x, (size_t)w);
    b[w - 1] |= (uint8_t)flags;
    for (int i = 0; i < w; i++) row[i] = BIG_ENDIAN_X ? b[w - 1 - i] : b[i];
}

/* One compressed row into xy-LE (canonical); the reason it is refused, or OK. */
static int decompress_row(int k, const uint8_t *row, uint64_t *xy) {
    uint64_t x[2 * N], xm[2 * N], a[2 * N], y[2 * N], yc[2 * N];
    int flags = read_x(k, row, x), zero = 1;
    for (int c = 0; c < k; c++) zero &= fq_is_zero(x + c * N);
    if ((flags & FLAG_MARKER) != FLAG_MARKER) return BAD_FLAGS;
    if (flags & FLAG_INFINITY) {
        if ((flags & FLAG_LARGER) || !zero) return BAD_FLAGS;
        memset(xy, 0, (size_t)(2 * k * W));
        return OK;
    }
    for (int c = 0; c < k; c++)
        if (fq_cmp(x + c * N, Q) >= 0) return NOT_BELOW_Q;
    for (int c = 0; c < k; c++) to_mont(x + c * N, xm + c * N);
    rhs(k, xm, a);
    if (k == 1) fq_sqrt(a, y); else fq2_sqrt(a, y);
    if (!is_root(k, y, a)) return NOT_ON_CURVE;
    for (int c = 0; c < k; c++) from_mont(y + c * N, yc + c * N);
    int y_zero = 1;
    for (int c = 0; c < k; c++) y_zero &= fq_is_zero(yc + c * N);
    if (y_zero && (flags & FLAG_LARGER)) return BAD_FLAGS; /* y = -y: the flag must be clear */
    if (larger(k, yc) != !!(flags & FLAG_LARGER))
        for (int c = 0; c < k; c++) fq_neg(yc + c * N, yc + c * N);
    memcpy(xy, x, (size_t)(k * W));
    memcpy(xy + k * N, yc, (size_t)(k * W));
    return OK;
}

/* One xy-LE row (canonical) into a compressed row; the reason it is refused, or OK. */
static int compress_row(int k, const uint64_t *xy, uint8_t *row) {
    const uint64_t *x = xy, *y = xy + k * N;
    int zero = 1;
    for (int c = 0; c < 2 * k; c++) zero &= fq_is_zero(xy + c * N);
    if (zero) {
        static const uint64_t none[2 * N];
        write_x(k, none, FLAG_INFINITY | FLAG_MARKER, row);
        return OK;
    }
    uint64_t xm[2 * N], ym[2 * N], a[2 * N];
    for (int c = 0; c < 2 * k; c++)
        if (fq_cmp(xy + c * N, Q) >= 0) return NOT_BELOW_Q;
    for (int c = 0; c < k; c++) {
        to_mont(x + c * N, xm + c * N);
        to_mont(y + c * N, ym + c * N);
    }
    rhs(k, xm, a);
    if (!is_root(k, ym, a)) return NOT_ON_CURVE;
    write_x(k, x, FLAG_MARKER | (larger(k, y) ? FLAG_LARGER : 0), row);
    return OK;
}

/* ---- whole tables: k = 1 (G1) or 2 (G2). Each returns the first refused row, its reason in
 * *reason, or -1; rows past a refused one may be left unwritten. ---- */

int64_t decompress_rows(int k, const uint8_t *in, uint64_t *out, int64_t n, int32_t *reason) {
    int64_t first = n;
#pragma omp parallel for schedule(dynamic, 1024) reduction(min : first) if (n > 64)
    for (int64_t i = 0; i < n; i++) {
        if (i > first) continue;
        if (decompress_row(k, in + (size_t)i * k * W, out + (size_t)i * 2 * k * N) != OK && i < first) first = i;
    }
    if (first == n) return -1;
    uint64_t scratch[4 * N];
    *reason = decompress_row(k, in + (size_t)first * k * W, scratch);
    return first;
}

int64_t compress_rows(int k, const uint64_t *in, uint8_t *out, int64_t n, int32_t *reason) {
    int64_t first = n;
#pragma omp parallel for schedule(static) reduction(min : first) if (n > 1024)
    for (int64_t i = 0; i < n; i++)
        if (compress_row(k, in + (size_t)i * 2 * k * N, out + (size_t)i * k * W) != OK && i < first) first = i;
    if (first == n) return -1;
    uint8_t scratch[2 * W];
    *reason = compress_row(k, in + (size_t)first * 2 * k * N, scratch);
    return first;
}
