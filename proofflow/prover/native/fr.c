/* A curve's scalar field Fr on the CPU: Montgomery form, 4 x 64-bit limbs, little-endian.
 * One element is 32 bytes, the same layout the GPU kernels read, so vectors cross
 * to the device with no conversion. Every routine takes whole arrays: the Python side
 * never loops over elements. Values are kept fully reduced (< p) after every op.
 * The curve's constants come as -D defines (proofflow.prover.native.field_defines): one
 * library a curve. */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#if !defined(FR_MODULUS) || !defined(FR_ONE) || !defined(FR_INV) || FR_LIMBS != 4
#error "compile with a curve's Fr constants of 4 limbs: FR_LIMBS, FR_MODULUS, FR_ONE, FR_INV"
#endif

typedef unsigned __int128 u128;
typedef uint64_t fr[4];

static const uint64_t P[4] = {FR_MODULUS};
static const uint64_t PINV = FR_INV; /* -p^-1 mod 2^64 */
static const uint64_t ONE_MONT[4] = {FR_ONE};

static inline int geq_p(const uint64_t *t) {
    for (int i = 3; i >= 0; i--) {
        if (t[i] > P[i]) return 1;
        if (t[i] < P[i]) return 0;
    }
    return 1;
}

static inline void sub_p(uint64_t *t) {
    u128 borrow = 0;
    for (int i = 0; i < 4; i++) {
        u128 d = (u128)t[i] - P[i] - borrow;
        t[i] = (uint64_t)d;
        borrow = (d >> 64) & 1;
    }
}

static inline void mont_mul(const uint64_t *a, const uint64_t *b, uint64_t *out) {
    /* CIOS; p < 2^255 (PrimeField's spare bit) so the running value never needs a fifth carry word
     * beyond t[4]. */
    uint64_t t[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        u128 c = 0;
        for (int j = 0; j < 4; j++) {
            c += (u128)a[j] * b[i] + t[j];
            t[j] = (uint64_t)c;
            c >>= 64;
        }
        c += t[4];
        t[4] = (uint64_t)c;
        t[5] = (uint64_t)(c >> 64);
        uint64_t m = t[0] * PINV;
        c = (u128)m * P[0] + t[0];
        c >>= 64;
        for (int j = 1; j < 4; j++) {
            c += (u128)m * P[j] + t[j];
            t[j - 1] = (uint64_t)c;
            c >>= 64;
        }
        c += t[4];
        t[3] = (uint64_t)c;
        t[4] = t[5] + (uint64_t)(c >> 64);
    }
    if (t[4] || geq_p(t)) sub_p(t);
    memcpy(out, t, 32);
}

static inline void add_mod(const uint64_t *a, const uint64_t *b, uint64_t *out) {
    uint64_t t[4];
    u128 c = 0;
    for (int i = 0; i < 4; i++) {
        c += (u128)a[i] + b[i];
        t[i] = (uint64_t)c;
        c >>= 64;
    }
    if (geq_p(t)) sub_p(t); /* a + b < 2p < 2^256: no carry out */
    memcpy(out, t, 32);
}

static inline void sub_mod(const uint64_t *a, const uint64_t *b, uint64_t *out) {
    uint64_t t[4];
    u128 borrow = 0;
    for (int i = 0; i < 4; i++) {
        u128 d = (u128)a[i] - b[i] - borrow;
        t[i] = (uint64_t)d;
        borrow = (d >> 64) & 1;
    }
    if (borrow) {
        u128 c = 0;
        for (int i = 0; i < 4; i++) {
            c += (u128)t[i] + P[i];
            t[i] = (uint64_t)c;
            c >>= 64;
        }
    }
    memcpy(out, t, 32);
}

static void mont_pow(const uint64_t *base, const uint64_t *exp, uint64_t *out) {
    uint64_t r[4], b[4];
    memcpy(r, ONE_MONT, 32);
    memcpy(b, base, 32);
    for (int i = 0; i < 4; i++)
        for (int bit = 0; bit < 64; bit++) {
            if ((exp[i] >> bit) & 1) mont_mul(r, b, r);
            mont_mul(b, b, b);
        }
    memcpy(out, r, 32);
}

static inline int is_zero(const uint64_t *a) { return (a[0] | a[1] | a[2] | a[3]) == 0; }

/* ---- element-wise array ops; b_stride 0 broadcasts one element ---- */

void fr_mul(const uint64_t *a, const uint64_t *b, int64_t b_stride, uint64_t *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 4096)
    for (int64_t i = 0; i < n; i++) mont_mul(a + 4 * i, b + 4 * i * b_stride, out + 4 * i);
}

void fr_add(const uint64_t *a, const uint64_t *b, int64_t b_stride, uint64_t *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; i++) add_mod(a + 4 * i, b + 4 * i * b_stride, out + 4 * i);
}

void fr_sub(const uint64_t *a, const uint64_t *b, int64_t b_stride, uint64_t *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; i++) sub_mod(a + 4 * i, b + 4 * i * b_stride, out + 4 * i);
}

/* Canonical integers (< p) in, Montgomery form out; 1 on an input >= p. 0 and 1 (a circuit's
   bits, most of some witnesses) are 0 and R without a product. */
int fr_to_mont(const uint64_t *a, const uint64_t *r2, uint64_t *out, int64_t n) {
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (n > 4096)
    for (int64_t i = 0; i < n; i++) {
        const uint64_t *x = a + 4 * i;
        if ((x[1] | x[2] | x[3]) == 0 && x[0] <= 1) {
            if (x[0]) memcpy(out + 4 * i, ONE_MONT, 32);
            else memset(out + 4 * i, 0, 32);
            continue;
        }
        if (geq_p(x)) { bad = 1; continue; }
        mont_mul(x, r2, out + 4 * i);
    }
    return bad;
}

void fr_from_mont(const uint64_t *a, uint64_t *out, int64_t n) {
    static const uint64_t one[4] = {1, 0, 0, 0};
#pragma omp parallel for schedule(static) if (n > 4096)
    for (int64_t i = 0; i < n; i++) mont_mul(a + 4 * i, one, out + 4 * i);
}

void fr_pow(const uint64_t *a, const uint64_t *exp, uint64_t *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 64)
    for (int64_t i = 0; i < n; i++) mont_pow(a + 4 * i, exp, out + 4 * i);
}

/* out[i] = start * base^i, computed in independent chunks so it parallelises. */
void fr_powers(const uint64_t *start, const uint64_t *base, uint64_t *out, int64_t n) {
    const int64_t chunk = 1 << 14;
    int64_t nchunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (nchunks > 1)
    for (int64_t c = 0; c < nchunks; c++) {
        uint64_t e[4] = {(uint64_t)(c * chunk), 0, 0, 0}, cur[4];
        mont_pow(base, e, cur);
        mont_mul(cur, start, cur);
        int64_t end = (c + 1) * chunk < n ? (c + 1) * chunk : n;
        for (int64_t i = c * chunk; i < end; i++) {
            memcpy(out + 4 * i, cur, 32);
            mont_mul(cur, base, cur);
        }
    }
}

/* Montgomery's trick: one exponentiation for the whole array. Returns the index of the
 * first zero element (which has no inverse), or -1. */
int64_t fr_batch_inverse(const uint64_t *a, uint64_t *out, const uint64_t *p_minus_2, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (is_zero(a + 4 * i)) return i;
    if (n == 0) return -1;
    uint64_t acc[4], inv[4], tmp[4];
    memcpy(acc, ONE_MONT, 32);
    for (int64_t i = 0; i < n; i++) { /* out[i] = a[0] * ... * a[i-1] */
        memcpy(out + 4 * i, acc, 32);
        mont_mul(acc, a + 4 * i, acc);
    }
    mont_pow(acc, p_minus_2, inv);
    for (int64_t i = n - 1; i >= 0; i--) {
        mont_mul(out + 4 * i, inv, tmp);
        mont_mul(inv, a + 4 * i, inv);
        memcpy(out + 4 * i, tmp, 32);
    }
    return -1;
}

/* ---- NTT: in place, radix-2 decimation in time after a bit-reversal permutation.
 * tw[j] = w^j for j < n/2, w a primitive n-th root of unity (w^-1 for the inverse). ---- */

static void bit_reverse(uint64_t *x, int log_n) {
    int64_t n = (int64_t)1 << log_n;
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = i, rev = 0;
        for (int b = 0; b < log_n; b++) { rev = (rev << 1) | (r & 1); r >>= 1; }
        if ((int64_t)rev > i) {
            uint64_t t[4];
            memcpy(t, x + 4 * i, 32);
            memcpy(x + 4 * i, x + 4 * rev, 32);
            memcpy(x + 4 * rev, t, 32);
        }
    }
}

void fr_ntt(uint64_t *x, int log_n, const uint64_t *tw) {
    int64_t n = (int64_t)1 << log_n;
    bit_reverse(x, log_n);
    for (int s = 1; s <= log_n; s++) {
        int64_t half = (int64_t)1 << (s - 1), stride = n >> s;
#pragma omp parallel for schedule(static) if (n > 16384)
        for (int64_t b = 0; b < n / 2; b++) {
            int64_t j = b & (half - 1), k = ((b >> (s - 1)) << s) + j;
            uint64_t v[4];
            mont_mul(x + 4 * (k + half), tw + 4 * (j * stride), v);
            uint64_t *u = x + 4 * k;
            sub_mod(u, v, x + 4 * (k + half));
            add_mod(u, v, u);
        }
    }
}

/* ---- sparse matrices (proofflow/prover/r1cs.py) ----
   CSR whose index arrays come in the narrowest width that holds them (1, 2 or 4 bytes
   unsigned, or 8 signed), as the constraint-system cache stores and memory-maps them; term k's
   coefficient is values[which[k]] (the distinct coefficients, indexed), or values[k] where
   which is NULL. Every index is checked as it is read, so a damaged or hostile cache file
   can make a product wrong but never reach outside its arrays: the products return the first
   row with a term out of bounds (a row pointer out of order or past nnz, a column past cols,
   a value index past nvalues), else -1. The values are checked below p once, before
   (fr_first_unreduced). */
typedef struct {
    const void *indptr, *indices, *which;
    const uint64_t *values;
    int64_t rows, cols, nnz, nvalues;
    int32_t indptr_width, indices_width, which_width;
} csr;

static inline __attribute__((always_inline)) int64_t csr_at(const void *p, int32_t width, int64_t k) {
    switch (width) {
    case 1: return ((const uint8_t *)p)[k];
    case 2: return ((const uint16_t *)p)[k];
    case 4: return ((const uint32_t *)p)[k];
    default: return ((const int64_t *)p)[k];
    }
}

/* The products' bodies take the widths as arguments so that each call below with constant
   widths compiles to its own loop, the switches folded away: the layouts of large systems
   (32-bit row pointers and columns; 8- or 32-bit value indices, or a value a term, as a
   circom r1cs or zkey is read); any other goes through the generic loop. */
#define CSR_DISPATCH(BODY, m, ...)                                                          \
    do {                                                                                    \
        int32_t pw = (m)->indptr_width, iw = (m)->indices_width, ww = (m)->which_width;    \
        if (pw == 4 && iw == 4 && ww == 4) return BODY(m, __VA_ARGS__, 4, 4, 4);            \
        if (pw == 4 && iw == 4 && ww == 1) return BODY(m, __VA_ARGS__, 4, 4, 1);            \
        if (pw == 4 && iw == 4 && ww == 0) return BODY(m, __VA_ARGS__, 4, 4, 0);            \
        return BODY(m, __VA_ARGS__, pw, iw, ww);                                            \
    } while (0)

static inline __attribute__((always_inline)) int csr_row(const csr *m, int32_t pw, int64_t r, int64_t *start,
                                                         int64_t *end) {
    *start = csr_at(m->indptr, pw, r);
    *end = csr_at(m->indptr, pw, r + 1);
    return 0 <= *start && *start <= *end && *end <= m->nnz;
}

/* Most coefficients of a circuit are 1 or -1 (circom writes most linear combinations' outputs
   with -1): a term of 1 is added and one of -1 subtracted, without their products. */
static inline int is_one(const uint64_t *a) {
    return a[0] == ONE_MONT[0] && a[1] == ONE_MONT[1] && a[2] == ONE_MONT[2] && a[3] == ONE_MONT[3];
}

/* a = -1 = p - R: a + R is p (a, R < p, so the sum does not pass 2^256). */
static inline int is_minus_one(const uint64_t *a) {
    u128 c = 0;
    for (int i = 0; i < 4; i++) {
        c += (u128)a[i] + ONE_MONT[i];
        if ((uint64_t)c != P[i]) return 0;
        c >>= 64;
    }
    return 1;
}

/* Term k's coefficient (and its column in *col), or NULL when the term is out of bounds. */
static inline __attribute__((always_inline)) const uint64_t *csr_term(const csr *m, int32_t iw, int32_t ww, int64_t k,
                                                                      int64_t *col) {
    int64_t c = csr_at(m->indices, iw, k);
    int64_t v = ww ? csr_at(m->which, ww, k) : k;
    if (c < 0 || c >= m->cols || v < 0 || v >= m->nvalues) return NULL;
    *col = c;
    return m->values + 4 * v;
}

static inline __attribute__((always_inline)) int64_t csr_matvec(const csr *m, const uint64_t *w, uint64_t *out,
                                                                int32_t pw, int32_t iw, int32_t ww) {
    int64_t bad = m->rows;
#pragma omp parallel for schedule(static) reduction(min : bad) if (m->rows > 4096)
    for (int64_t r = 0; r < m->rows; r++) {
        uint64_t acc[4] = {0, 0, 0, 0}, t[4];
        int64_t start, end, col;
        if (!csr_row(m, pw, r, &start, &end)) {
            bad = r < bad ? r : bad;
            continue;
        }
        for (int64_t k = start; k < end; k++) {
            const uint64_t *coeff = csr_term(m, iw, ww, k, &col);
            if (!coeff) {
                bad = r < bad ? r : bad;
                break;
            }
            if (is_one(coeff)) {
                add_mod(acc, w + 4 * col, acc);
            } else if (is_minus_one(coeff)) {
                sub_mod(acc, w + 4 * col, acc);
            } else {
                mont_mul(coeff, w + 4 * col, t);
                add_mod(acc, t, acc);
            }
        }
        memcpy(out + 4 * r, acc, 32);
    }
    return bad < m->rows ? bad : -1;
}

static inline __attribute__((always_inline)) int64_t csr_rmatvec(const csr *m, const uint64_t *x, uint64_t *out,
                                                                 int32_t pw, int32_t iw, int32_t ww) {
    memset(out, 0, 32 * (size_t)m->cols);
    for (int64_t r = 0; r < m->rows; r++) {
        uint64_t t[4];
        int64_t start, end, col;
        if (!csr_row(m, pw, r, &start, &end)) return r;
        for (int64_t k = start; k < end; k++) {
            const uint64_t *coeff = csr_term(m, iw, ww, k, &col);
            if (!coeff) return r;
            if (is_one(coeff)) {
                add_mod(out + 4 * col, x + 4 * r, out + 4 * col);
            } else if (is_minus_one(coeff)) {
                sub_mod(out + 4 * col, x + 4 * r, out + 4 * col);
            } else {
                mont_mul(coeff, x + 4 * r, t);
                add_mod(out + 4 * col, t, out + 4 * col);
            }
        }
    }
    return -1;
}

/* out = M . w, out of length rows. The matrix is read from a local copy, whose fields out
   cannot alias. */
int64_t fr_csr_matvec(const csr *mp, const uint64_t *w, uint64_t *out) {
    const csr m = *mp;
    CSR_DISPATCH(csr_matvec, &m, w, out);
}

/* out = M^T . x, out of length cols, without the transpose: each row's terms added into their
   columns. One thread: the columns' sums would race, and per-thread copies of out cost what the
   transpose did in memory. */
int64_t fr_csr_rmatvec(const csr *mp, const uint64_t *x, uint64_t *out) {
    const csr m = *mp;
    CSR_DISPATCH(csr_rmatvec, &m, x, out);
}

/* Index of the first element of a not below p, or -1. */
int64_t fr_first_unreduced(const uint64_t *a, int64_t n) {
    int64_t first = n;
#pragma omp parallel for schedule(static) reduction(min : first) if (n > 4096)
    for (int64_t i = 0; i < n; i++)
        if (i < first && geq_p(a + 4 * i)) first = i;
    return first < n ? first : -1;
}

/* Index of the first i with a[i]*b[i] != c[i], or -1. */
int64_t fr_first_unsatisfied(const uint64_t *a, const uint64_t *b, const uint64_t *c, int64_t n) {
    int64_t first = n;
#pragma omp parallel for schedule(static) reduction(min : first) if (n > 4096)
    for (int64_t i = 0; i < n; i++) {
        uint64_t t[4];
        mont_mul(a + 4 * i, b + 4 * i, t);
        if (i < first && memcmp(t, c + 4 * i, 32) != 0) first = i;
    }
    return first < n ? first : -1;
}

/* ---- the MiMC-5 chain (proofflow/prover/circuits/mimc.py), in Montgomery form ---- */

/* trace[3i..3i+2] = t2, t4, x_{i+1} of round i: s = x_i + k + c_i, t2 = s^2, t4 = t2^2,
   x_{i+1} = t4 * s. Sequential: each round needs the one before. */
void mimc_trace(const uint64_t *key, const uint64_t *x0, const uint64_t *consts, int64_t rounds, uint64_t *trace) {
    uint64_t x[4], s[4];
    memcpy(x, x0, 32);
    for (int64_t i = 0; i < rounds; i++) {
        uint64_t *t = trace + 12 * i;
        add_mod(x, key, s);
        add_mod(s, consts + 4 * i, s);
        mont_mul(s, s, t);
        mont_mul(t, t, t + 4);
        mont_mul(t + 4, s, t + 8);
        memcpy(x, t + 8, 32);
    }
}

/* The a/b/c vectors of the chain's extended system (MimcChain._build, then one input row
   per instance variable) from its witness, into buffers of n >= 3R + 4 rows, the rest zeroed:
   the rows of the sparse matrices, written out. Witness: 0 one, 1 x_0, 2 y, 3 k, then
   t2_i = 4 + 3i, t4_i = 5 + 3i, x_{i+1} = 6 + 3i. */
/* The rows every built-in family ends with after its output row `last`: one per input
   variable (the constant and the two public inputs: w_j * 0 = 0, so the QAP's A query
   carries each input), then zeros to the domain's n rows. */
static void input_rows_and_padding(const uint64_t *w, int64_t last, uint64_t *a, uint64_t *b, uint64_t *c,
                                   int64_t n) {
    for (int j = 0; j < 3; j++) {
        memcpy(a + 4 * (last + 1 + j), w + 4 * j, 32);
        memset(b + 4 * (last + 1 + j), 0, 32);
        memset(c + 4 * (last + 1 + j), 0, 32);
    }
    int64_t used = last + 4;
    memset(a + 4 * used, 0, 32 * (n - used));
    memset(b + 4 * used, 0, 32 * (n - used));
    memset(c + 4 * used, 0, 32 * (n - used));
}

void mimc_abc(const uint64_t *w, const uint64_t *consts, int64_t rounds, uint64_t *a, uint64_t *b, uint64_t *c,
              int64_t n) {
#pragma omp parallel for schedule(static) if (rounds > 4096)
    for (int64_t i = 0; i < rounds; i++) {
        const uint64_t *x = i == 0 ? w + 4 : w + 4 * (3 + 3 * i), *t2 = w + 4 * (4 + 3 * i),
                       *t4 = w + 4 * (5 + 3 * i), *x1 = w + 4 * (6 + 3 * i);
        uint64_t s[4];
        add_mod(x, w + 12, s);
        add_mod(s, consts + 4 * i, s);
        int64_t r = 3 * i;
        memcpy(a + 4 * r, s, 32), memcpy(b + 4 * r, s, 32), memcpy(c + 4 * r, t2, 32);
        memcpy(a + 4 * (r + 1), t2, 32), memcpy(b + 4 * (r + 1), t2, 32), memcpy(c + 4 * (r + 1), t4, 32);
        memcpy(a + 4 * (r + 2), t4, 32), memcpy(b + 4 * (r + 2), s, 32), memcpy(c + 4 * (r + 2), x1, 32);
    }
    int64_t last = 3 * rounds;
    add_mod(w + 4 * (3 + 3 * rounds), w + 12, a + 4 * last);  /* (x_R + k) * 1 = y */
    memcpy(b + 4 * last, w, 32);
    memcpy(c + 4 * last, w + 8, 32);
    input_rows_and_padding(w, last, a, b, c, n);
}

/* ---- the bit-gadget chain (proofflow/prover/circuits/bits.py), in Montgomery form ---- */

#define BITS_WORD 32
#define BITS_ROT 7
#define BITS_BLOCK (3 * BITS_WORD + 1)     /* rows and variables a block: m, its bits, a, s' */
#define BITS_HEAD_ROWS (BITS_WORD + 1)     /* x0's Num2Bits */
#define BITS_HEAD_VARS (3 + BITS_WORD)     /* one, x0, y, x0's bits */

/* sum_j 2^j x_j over WORD consecutive elements, by Horner's rule */
static void bits_pack(const uint64_t *x, uint64_t *out) {
    uint64_t acc[4] = {0, 0, 0, 0};
    for (int j = BITS_WORD - 1; j >= 0; j--) {
        add_mod(acc, acc, acc);
        add_mod(acc, x + 4 * j, acc);
    }
    memcpy(out, acc, 32);
}

/* Num2Bits's rows for the WORD consecutive bits x and their word: x_j * (x_j - 1) = 0, then
   (sum_j 2^j x_j) * 1 = word. w[0] is the constant one. */
static void bits_num2bits(const uint64_t *w, const uint64_t *x, const uint64_t *word, uint64_t *a, uint64_t *b,
                          uint64_t *c) {
    for (int j = 0; j < BITS_WORD; j++) {
        memcpy(a + 4 * j, x + 4 * j, 32);
        sub_mod(x + 4 * j, w, b + 4 * j);
        memset(c + 4 * j, 0, 32);
    }
    bits_pack(x, a + 4 * BITS_WORD);
    memcpy(b + 4 * BITS_WORD, w, 32);
    memcpy(c + 4 * BITS_WORD, word, 32);
}

/* The a/b/c vectors of the chain's extended system (BitsChain._build, then one input row
   per instance variable) from its witness, into buffers of n >= HEAD_ROWS + BLOCK * blocks + 4
   rows, the rest zeroed; blocks >= 1. Witness: 0 one, 1 x0, 2 y, 3.. x0's bits, then per
   block from v: m, its bits at v+1, a at v+33, s' at v+65; the state s of block i is block
   i-1's s'. */
void bits_abc(const uint64_t *w, int64_t blocks, uint64_t *a, uint64_t *b, uint64_t *c, int64_t n) {
    const uint64_t *x0_bits = w + 4 * 3;
    bits_num2bits(w, x0_bits, w + 4, a, b, c);
#pragma omp parallel for schedule(static) if (blocks > 256)
    for (int64_t i = 0; i < blocks; i++) {
        const uint64_t *v = w + 4 * (BITS_HEAD_VARS + BITS_BLOCK * i);
        const uint64_t *s = i == 0 ? x0_bits : v - 4 * BITS_WORD, *mb = v + 4, *and_ = v + 4 * (BITS_WORD + 1),
                       *s2 = v + 4 * (2 * BITS_WORD + 1);
        int64_t r = BITS_HEAD_ROWS + BITS_BLOCK * i;
        bits_num2bits(w, mb, v, a + 4 * r, b + 4 * r, c + 4 * r);
        for (int j = 0; j < BITS_WORD; j++) {
            int64_t ra = r + BITS_WORD + 1 + j, rx = r + 2 * BITS_WORD + 1 + j;
            memcpy(a + 4 * ra, mb + 4 * j, 32);  /* mb_j * s_(j+ROT) = a_j */
            memcpy(b + 4 * ra, s + 4 * ((j + BITS_ROT) % BITS_WORD), 32);
            memcpy(c + 4 * ra, and_ + 4 * j, 32);
            add_mod(s + 4 * j, s + 4 * j, a + 4 * rx);  /* (2 s_j) * a_j = s_j + a_j - s'_j */
            memcpy(b + 4 * rx, and_ + 4 * j, 32);
            add_mod(s + 4 * j, and_ + 4 * j, c + 4 * rx);
            sub_mod(c + 4 * rx, s2 + 4 * j, c + 4 * rx);
        }
    }
    int64_t last = BITS_HEAD_ROWS + BITS_BLOCK * blocks;
    /* (sum_j 2^j s_j) * 1 = y, s the last block's s': the witness's last WORD variables */
    bits_pack(w + 4 * (BITS_HEAD_VARS + BITS_BLOCK * blocks - BITS_WORD), a + 4 * last);
    memcpy(b + 4 * last, w, 32);
    memcpy(c + 4 * last, w + 8, 32);
    input_rows_and_padding(w, last, a, b, c, n);
}
