// NTT kernels over Fr with the conventions of prover.polynomial.domain.Radix2Domain:
// radix-2 decimation in time (Cooley-Tukey) after a bit-reversal permutation, with
// tw[j] = w^j (j < n/2) for the forward transform and w^-j for the inverse. Field
// arithmetic is exact, so any correct ordering gives the CPU's values bit for bit.
//
// A transform is one permutation kernel (out of place, with an optional fused scaling)
// and a few in-place passes, each running up to 10 butterfly stages on tiles of 1024
// elements in shared memory: about three trips through device memory for 2^24 instead
// of one per stage. The prover's scalings (1/n, g^i, g^-i/n) ride along on a
// permutation's load or a last pass's store, never as a separate sweep.
#include "fr.cuh"

#define TILE 1024      // elements in a pass's shared-memory tile (32 KiB)
#define THREADS 256

// scale modes: multiply by nothing, by one element, or by table[index]
#define SCALE_NONE 0
#define SCALE_ONE 1
#define SCALE_TABLE 2

__device__ __forceinline__ fr_t apply_scale(const fr_t& x, const u32* scale, int mode, u64 i) {
    if (mode == SCALE_NONE) return x;
    return fr_mul(x, fr_load(scale, mode == SCALE_ONE ? 0 : i));
}

__device__ __forceinline__ u32 bitrev(u32 i, int log_n) {
    return log_n == 0 ? 0 : __brev(i) >> (32 - log_n);
}

// out[i] = in[rev(i)] * scale, the table (if any) indexed by the source position rev(i)
extern "C" __global__ void bitrev_scale(const u32* in, u32* out, int log_n, const u32* scale,
                                        int mode) {
    u32 n = 1u << log_n;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        u32 r = bitrev(i, log_n);
        fr_store(out, i, apply_scale(fr_load(in, r), scale, mode, r));
    }
}

// out[i] = (a*b - c)[rev(i)] * zinv: H's pointwise step fused into the permutation of
// the coset iNTT that follows it.
extern "C" __global__ void bitrev_h(const u32* a, const u32* b, const u32* c, u32* out, int log_n,
                                    const u32* zinv) {
    u32 n = 1u << log_n;
    fr_t z = fr_load(zinv, 0);
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        u32 r = bitrev(i, log_n);
        fr_t ab = fr_mul(fr_load(a, r), fr_load(b, r));
        fr_store(out, i, fr_mul(ab - fr_load(c, r), z));
    }
}

// Stages s0+1 .. s0+S of the transform of size 2^log_n, in place. They pair indices that
// differ in bits s0 .. s0+S-1, so a tile is 2^S rows (those bits) by 2^log_l adjacent
// columns (low bits, for wider memory accesses): element (r, c) of block (hi, lo0) is
// x[hi * 2^(s0+S) + r * 2^s0 + lo0 + c]. Shared memory holds word k of slot e at
// sh[k * TILE + e], so neighbouring threads touch neighbouring banks.
extern "C" __global__ void __launch_bounds__(THREADS)
ntt_pass(u32* x, const u32* tw, int log_n, int s0, int S, int log_l, const u32* scale, int mode) {
    __shared__ u32 sh[8 * TILE];
    const u32 L = 1u << log_l, tile = 1u << (S + log_l);
    const u32 lo_blocks = (1u << s0) >> log_l;
    const u32 lo0 = (blockIdx.x % lo_blocks) << log_l;
    const u64 base = ((u64)(blockIdx.x / lo_blocks) << (s0 + S)) + lo0;

    for (u32 e = threadIdx.x; e < tile; e += THREADS) {
        fr_t v = fr_load(x, base + ((u64)(e >> log_l) << s0) + (e & (L - 1)));
#pragma unroll
        for (int k = 0; k < 8; k++) sh[k * TILE + e] = v.w[k];
    }
    __syncthreads();

    for (int st = 0; st < S; st++) {
        const u32 half = 1u << st;  // in rows
        const int tw_shift = log_n - (s0 + st + 1);  // stage s uses w^(j * n / 2^s)
        for (u32 bt = threadIdx.x; bt < tile / 2; bt += THREADS) {
            u32 c = bt & (L - 1), b = bt >> log_l;
            u32 j = b & (half - 1), r = ((b >> st) << (st + 1)) + j;
            u32 eu = r * L + c, ev = eu + half * L;
            fr_t u, v;
#pragma unroll
            for (int k = 0; k < 8; k++) {
                u.w[k] = sh[k * TILE + eu];
                v.w[k] = sh[k * TILE + ev];
            }
            // the butterfly's position within its stage-s block, over the whole vector
            u32 jg = (j << s0) + lo0 + c;
            v = fr_mul(v, fr_load(tw, (u64)jg << tw_shift));
            fr_t sum = u + v, dif = u - v;
#pragma unroll
            for (int k = 0; k < 8; k++) {
                sh[k * TILE + eu] = sum.w[k];
                sh[k * TILE + ev] = dif.w[k];
            }
        }
        __syncthreads();
    }

    for (u32 e = threadIdx.x; e < tile; e += THREADS) {
        fr_t v;
#pragma unroll
        for (int k = 0; k < 8; k++) v.w[k] = sh[k * TILE + e];
        u64 g = base + ((u64)(e >> log_l) << s0) + (e & (L - 1));
        fr_store(x, g, apply_scale(v, scale, mode, g));
    }
}

// out[i] = start * base^i, from pows[k] = base^(2^k): each element independently.
extern "C" __global__ void fr_powers(u32* out, u32 n, const u32* start, const u32* pows) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        fr_t acc = fr_load(start, 0);
        for (int k = 0; (i >> k) != 0; k++)
            if ((i >> k) & 1) acc = fr_mul(acc, fr_load(pows, k));
        fr_store(out, i, acc);
    }
}

// Element-wise a * b (b of stride 0 broadcasts): tests and the product-rate benchmark.
extern "C" __global__ void fr_mul_vec(const u32* a, const u32* b, int b_stride, u32* out, u32 n) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        fr_store(out, i, fr_mul(fr_load(a, i), fr_load(b, (u64)i * b_stride)));
}

extern "C" __global__ void fr_add_vec(const u32* a, const u32* b, u32* out, u32 n) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        fr_store(out, i, fr_load(a, i) + fr_load(b, i));
}

extern "C" __global__ void fr_sub_vec(const u32* a, const u32* b, u32* out, u32 n) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        fr_store(out, i, fr_load(a, i) - fr_load(b, i));
}

// x[i] <- x[i]^(2^iters): a dependent chain of squarings, for the product rate alone.
extern "C" __global__ void fr_square_chain(u32* x, u32 n, int iters) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        fr_t v = fr_load(x, i);
        for (int k = 0; k < iters; k++) v = fr_mul(v, v);
        fr_store(x, i, v);
    }
}
