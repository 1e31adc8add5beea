// Hand-written CUDA C++ equivalent of examples/gemm_tf32.kern, for `python -m bench`.
// kernc ABI: a, b, c, then the size symbols M, K, N.
//   c[i, j] = sum over k of tf32(a[i, k]) * tf32(b[k, j])   (row-major f32 a: M x K, b: K x N; c overwritten)
// tf32(x): x rounded as cvt.rna.tf32.f32 (to nearest, ties away from zero; 10 mantissa bits), a NaN
// the quiet NaN 0x7fc00000 -- the bit arithmetic kern-mma-contractions writes in the IR.
// With nvcc for sm_80 and later (__CUDA_ARCH__ >= 800) it is the kernel kern-mma-contractions makes
// of the @tf32 loop (`kernc compile examples/gemm_tf32.kern --emit gpu --remarks`): gemm_mma_tiles.cuh's
// tiles, with the 32 x 128 tile of b stored n-major (bs[n][k]) in __shared__ memory, rows padded by 4
// elements (144-byte rows: ldmatrix without bank conflicts), each value rounded as it is staged; per
// k8 step ldmatrix.x4 (A), ldmatrix.x2 (B) and mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// (PTX ISA 9.7.14.5.7).
// Elsewhere (the CPU emulator) each output sums the rounded products k ascending in f32: the CPU
// interpreter's mma.sync order, so the two CPU runs agree bit for bit.
__device__ inline float round_tf32(float x)
{
    unsigned int bits;
    memcpy(&bits, &x, 4);
    bits = x != x ? 0x7fc00000u : (bits + 0x1000u) & 0xffffe000u;
    float r;
    memcpy(&r, &bits, 4);
    return r;
}

#include "gemm_mma_tiles.cuh"

struct GemmTf32 : MmaBNMajor<float, 36> {
    using In = float;
    using Acc = float;
    static constexpr unsigned int A_ROW = 36;
    __device__ static float stage(float x) { return round_tf32(x); }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    __device__ static void mma(float (&d)[4], const unsigned int (&a)[4], const unsigned int (&b)[2])
    {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
#endif
    __device__ static float dot(const float* a, const float* b, unsigned int i, unsigned int j, unsigned int K,
                                unsigned int N)
    {
        float acc = 0.0f;
        for (unsigned int k = 0; k < K; ++k)
            acc = acc + round_tf32(a[i * K + k]) * round_tf32(b[k * N + j]);
        return acc;
    }
};

extern "C" __global__ void __launch_bounds__(256)
gemm_tf32(const float* a, const float* b, float* c, unsigned int M, unsigned int K, unsigned int N)
{
    gemm_mma_tiles<GemmTf32>(a, b, c, M, K, N);
}
