// The CPU twin of the curve kernels: proofflow/prover/device/msm.cu and fixed_base.cu compiled by a
// host C++ compiler (mont.cuh swaps its PTX carry chains for common.cuh's portable C++), so the
// templates (Fq2, the XYZZ formulas, the affine conversion, the kernels' per-thread bodies
// with their index arithmetic) run and are checked against arkworks without a GPU.
//
// twin_<kernel>(threads, <the kernel's arguments>) runs a kernel's body for each thread
// index, as a launch would; the warp-level scalar sort (msm_count, msm_scatter) is done
// serially from the same digit helpers. The twin_f* / twin_xyzz_* entry points expose
// the field and point routines one operation at a time.
#include "msm.cu"
#include "fixed_base.cu"

#define TWIN extern "C" __attribute__((visibility("default")))

// ---- kernels ----

template <class F> static void to_montgomery_all(u64 threads, u64* pts, u64 n) {
    for (u64 i = 0; i < threads && i < n; i++) to_montgomery_body<F>(pts, i);
}
TWIN void twin_to_montgomery_g1(u64 threads, u64* pts, u64 n) { to_montgomery_all<fq_t>(threads, pts, n); }
TWIN void twin_to_montgomery_g2(u64 threads, u64* pts, u64 n) { to_montgomery_all<fq2_t>(threads, pts, n); }

TWIN void twin_msm_count(u64 /*threads: n*/, const u32* scalars, u64 n, int c, int nwin, int shifts, u32* counts) {
    int nb = 1 << (c - 1);
    for (u64 i = 0; i < n; i++) {
        u64 s[4];
        canonical_scalar(scalars, i, s);
        int carry = 0;
        for (int w = 0; w < nwin; w++) {
            u32 slot = digit_slot(w, shifts, window_digit(s, w, c, carry), nb);
            if (slot != NO_SLOT) counts[slot]++;
        }
    }
}

TWIN void twin_msm_scatter(u64 /*threads: n*/, const u32* scalars, u64 n, int c, int nwin, int shifts, u32* cursor,
                           u32* entries) {
    int nb = 1 << (c - 1);
    for (u64 i = 0; i < n; i++) {
        u64 s[4];
        canonical_scalar(scalars, i, s);
        int carry = 0;
        for (int w = 0; w < nwin; w++) {
            int d = window_digit(s, w, c, carry);
            u32 slot = digit_slot(w, shifts, d, nb);
            if (slot != NO_SLOT) entries[cursor[slot]++] = digit_entry(i, n, w, shifts, d);
        }
    }
}

#define TWIN_GROUP_KERNELS(G, F)                                                                       \
    TWIN void twin_msm_accumulate_##G(u64 threads, const u64* pts, const u32* entries, const u32* offsets, \
                                      const u32* counts, const u32* piece_seg, const u32* seg_first,     \
                                      u32 npieces, u32 size, u64* out) {                                 \
        for (u32 k = 0; k < threads && k < npieces; k++)                                                 \
            accumulate_body<F>(pts, entries, offsets, counts, piece_seg, seg_first, size, k, out);       \
    }                                                                                                    \
    TWIN void twin_msm_accumulate_spans_##G(u64 threads, const u64* pts, const u32* entries,             \
                                            const u32* offsets, const u32* counts, const u32* span_seg,  \
                                            const u32* seg_first, u32 nspans, u32 size, u32 total,       \
                                            u64* out) {                                                  \
        for (u32 k = 0; k < threads && k < nspans; k++)                                                  \
            accumulate_span_body<F>(pts, entries, offsets, counts, span_seg, seg_first, size, total, k, out); \
    }                                                                                                    \
    TWIN void twin_msm_combine_##G(u64 threads, const u64* in, const u32* start, const u32* len,         \
                                   const u32* group_seg, const u32* seg_first, u32 ngroups, u32 size,    \
                                   u64* out) {                                                           \
        for (u32 k = 0; k < threads && k < ngroups; k++)                                                 \
            combine_body<F>(in, start, len, group_seg, seg_first, size, k, out);                         \
    }                                                                                                    \
    TWIN void twin_msm_reduce_##G(u64 threads, const u64* parts, const u32* first, const u32* len, int nb, \
                                  int nsets, int chunks, u64* out) {                                     \
        for (int t = 0; (u64)t < threads && t < nsets * chunks; t++)                                     \
            reduce_body<F>(parts, first, len, nb, chunks, t, out);                                       \
    }                                                                                                    \
    TWIN void twin_msm_shift_##G(u64 threads, const u64* src, u64* dst, u64* tmp, u64 n, int dbls,       \
                                 u32 batch) {                                                            \
        for (u64 t = 0; t < threads && t * batch < n; t++) shift_body<F>(src, dst, tmp, n, dbls, batch, t); \
    }                                                                                                    \
    TWIN void twin_fixed_base_##G(u64 threads, const u64* table, const u32* scalars, u64 n, u64* out,    \
                                  u64* tmp, u32 batch) {                                                 \
        for (u64 t = 0; t < threads && t * batch < n; t++)                                               \
            fixed_base_body<F>(table, scalars, tmp, n, batch, t, out);                                   \
    }

TWIN_GROUP_KERNELS(g1, fq_t)
TWIN_GROUP_KERNELS(g2, fq2_t)

// ---- single operations, element-wise over n inputs (u64 limbs, F::U64 an element) ----

enum { OP_MUL, OP_SQR, OP_ADD, OP_SUB, OP_NEG, OP_INV, OP_TO_MONT, OP_FROM_MONT };

template <class F> static void field_op(int op, const u64* a, const u64* b, u64* out, u64 n) {
    for (u64 i = 0; i < n; i++) {
        F x = f_load<F>(a + F::U64 * i), y = f_load<F>(b + F::U64 * i), r;
        switch (op) {
            case OP_MUL: r = f_mul(x, y); break;
            case OP_SQR: r = f_sqr(x); break;
            case OP_ADD: r = f_add(x, y); break;
            case OP_SUB: r = f_sub(x, y); break;
            case OP_NEG: r = f_neg(x); break;
            case OP_INV: r = f_inv(x); break;
            case OP_TO_MONT: r = f_to_mont(x); break;
            default: r = f_from_mont(x); break;
        }
        f_store(out + F::U64 * i, r);
    }
}
TWIN void twin_fq_op(int op, const u64* a, const u64* b, u64* out, u64 n) { field_op<fq_t>(op, a, b, out, n); }
TWIN void twin_fq2_op(int op, const u64* a, const u64* b, u64* out, u64 n) { field_op<fq2_t>(op, a, b, out, n); }

// mont.cuh's mul_wide (the GPU's "wide" variant) on the host's carry chains, element-wise:
// Fq (fq_t::U64 u64 limbs an element, 6 on BLS12-381) and Fr (4). The twin's own products are
// the reference CIOS.
TWIN void twin_fq_mul_wide(const u64* a, const u64* b, u64* out, u64 n) {
    const u64 w = fq_t::U64;
    for (u64 i = 0; i < n; i++) fq_store(out + w * i, fq_t::mul_wide(fq_load(a + w * i), fq_load(b + w * i)));
}
TWIN void twin_fr_mul_wide(const u32* a, const u32* b, u32* out, u64 n) {
    for (u64 i = 0; i < n; i++) fr_store(out, i, fr_t::mul_wide(fr_load(a, i), fr_load(b, i)));
}

TWIN void twin_canonical_scalars(const u32* scalars, u64 n, u64* out) {
    for (u64 i = 0; i < n; i++) canonical_scalar(scalars, i, out + 4 * i);
}

// XYZZ operations (points as 4 * F::U64 limbs, affine inputs as 2 * F::U64, Montgomery):
// madd: out = a + affine b; add: out = a + b; dbl: out = 2a; affine: out = a as canonical xy.
enum { XYZZ_MADD, XYZZ_ADD, XYZZ_DBL, XYZZ_AFFINE };

template <class F> static void xyzz_op(int op, const u64* a, const u64* b, u64* out) {
    xyzz_t<F> p = xyzz_load<F>(a);
    switch (op) {
        case XYZZ_MADD: xyzz_store(out, xyzz_add_affine(p, f_load<F>(b), f_load<F>(b + F::U64))); break;
        case XYZZ_ADD: xyzz_store(out, xyzz_add(p, xyzz_load<F>(b))); break;
        case XYZZ_DBL: xyzz_store(out, xyzz_dbl(p)); break;
        default: {  // a batch of one point
            u64 tmp[4 * F::U64];
            affine_batch<F> o(out, tmp);
            o.put(0, p);
            o.finish(0, 1, true);
        }
    }
}
TWIN void twin_xyzz_g1(int op, const u64* a, const u64* b, u64* out) { xyzz_op<fq_t>(op, a, b, out); }
TWIN void twin_xyzz_g2(int op, const u64* a, const u64* b, u64* out) { xyzz_op<fq2_t>(op, a, b, out); }

// ==== bitsum.cu: the split of witness MSMs by scalar value (proofflow/prover/device/sparse.py) ====
#include "bitsum.cu"

TWIN void twin_bitsum_classify(u64 threads, const u32* scalars, u64 n, unsigned char* out) {
    for (u64 i = 0; i < threads && i < n; i++) out[i] = bitsum_class_body(scalars, i);
}

#define TWIN_BITSUM_KERNELS(G, F)                                                                      \
    TWIN void twin_bitsum_points_##G(u64 launched, const u64* pts, const u32* idx, u32 count, u32 threads, \
                                     u64* out) {                                                       \
        for (u32 k = 0; k < launched && k < threads; k++) bitsum_points_body<F>(pts, idx, count, threads, k, out); \
    }                                                                                                  \
    TWIN void twin_bitsum_fold_##G(u64 launched, const u64* in, u32 count, u32 threads, u64* out) {    \
        for (u32 k = 0; k < launched && k < threads; k++) bitsum_fold_body<F>(in, count, threads, k, out); \
    }

TWIN_BITSUM_KERNELS(g1, fq_t)
TWIN_BITSUM_KERNELS(g2, fq2_t)
// ==== end of bitsum.cu ====

// ==== msm_affine.cuh (part of msm.cu): batch-affine rounds of the bucket accumulation ====
#define TWIN_AFFINE_KERNELS(G, F)                                                                      \
    TWIN void twin_msm_affine_up_##G(u64 launched, const u64* pts, const u32* entries, const u32* start, \
                                     const u32* len, const u32* item_seg, const u32* seg_first, u32 items, \
                                     u32 threads, u64* out, u64* tot) {                                \
        for (u32 t = 0; t < launched && t < threads; t++)                                              \
            affine_up_body<F>(pts, entries, start, len, item_seg, seg_first, items, threads, t, out, tot); \
    }                                                                                                  \
    TWIN void twin_msm_affine_down_##G(u64 launched, const u64* pts, const u32* entries, const u32* start, \
                                       const u32* len, const u32* item_seg, const u32* seg_first, u32 items, \
                                       u32 threads, u64* out, u64* tot) {                              \
        for (u32 t = 0; t < launched && t < threads; t++)                                              \
            affine_down_body<F>(pts, entries, start, len, item_seg, seg_first, items, threads, t, out, tot); \
    }                                                                                                  \
    TWIN void twin_msm_invert_up_##G(u64 launched, const u64* vals, u64* pre, u64 count, u64 threads, u64* tot) { \
        for (u64 t = 0; t < launched && t < threads; t++) invert_up_body<F>(vals, pre, count, threads, t, tot); \
    }                                                                                                  \
    TWIN void twin_msm_invert_down_##G(u64 launched, u64* vals, const u64* pre, u64 count, u64 threads,  \
                                       const u64* tot) {                                               \
        for (u64 t = 0; t < launched && t < threads; t++) invert_down_body<F>(vals, pre, count, threads, t, tot); \
    }                                                                                                  \
    TWIN void twin_msm_invert_##G(u64 launched, u64* vals, u64 count) {                                \
        for (u64 i = 0; i < launched && i < count; i++) invert_body<F>(vals, i);                       \
    }

TWIN_AFFINE_KERNELS(g1, fq_t)
TWIN_AFFINE_KERNELS(g2, fq2_t)
// ==== end of msm_affine.cuh ====

// ==== decompress.cu: a key table's compressed points made the MSMs' (proofflow/prover/device/decompress.py) ====
#include "decompress.cu"

#define TWIN_DECOMPRESS_KERNEL(G, F)                                                                   \
    TWIN void twin_decompress_##G(u64 threads, const uint4* in, u64* out, u64 n, u64 first, int mont, u64* bad) { \
        for (u64 i = 0; i < threads && i < n; i++) {                                                   \
            u32 reason = decompress_body<F>(in, out, i, mont);                                         \
            u64 code = ((first + i) << 8) | reason;                                                    \
            if (reason && code < *bad) *bad = code;                                                    \
        }                                                                                              \
    }

TWIN_DECOMPRESS_KERNEL(g1, fq_t)
TWIN_DECOMPRESS_KERNEL(g2, fq2_t)
// ==== end of decompress.cu ====
