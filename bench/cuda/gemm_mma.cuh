// The operand kind shared by bench/cuda/gemm_f16.cu and gemm_bf16.cu (included by each after it
// defines MMA_TYPE, the PTX type of the operands, and TO_FLOAT, the exact conversion of their bits)
// for gemm_mma_tiles.cuh's tiled tensor-core GEMM.
// kernc ABI: a, b, c, then the size symbols M, K, N.   c[i, j] = sum over k of a[i, k] * b[k, j]
// (row-major a: M x K, b: K x N of 16-bit floats passed as their bits; c: M x N f32, overwritten).
// With nvcc for sm_80 and later (__CUDA_ARCH__ >= 800) it is the kernel kern-mma-contractions makes
// of the naive loop (`kernc compile examples/gemm_f16.kern --emit gpu --remarks`): gemm_mma_tiles.cuh's
// tiles, with a and b k-major in __shared__ memory, rows padded by 8 elements (16 bytes: ldmatrix
// without bank conflicts); per k16 step ldmatrix.x4 (A) and ldmatrix.x2.trans (B) fragments and
// mma.sync.aligned.m16n8k16.row.col.f32 (PTX ISA, "Warp-level matrix multiply-accumulate
// instructions").
// Elsewhere (the CPU emulator, bench/emulate.h) each output sums k ascending in f32, a product then a
// sum per step: the CPU interpreter's mma.sync order, so the two CPU runs agree bit for bit.
#include "gemm_mma_tiles.cuh"

struct GemmMma16 {
    using In = unsigned short;  // the operands' bits
    using Acc = float;
    static constexpr unsigned int A_ROW = 40, B_ROW = 136;
    static constexpr bool B_N_MAJOR = false;
    template <class T>
    __device__ static T stage(T x) { return x; }  // as loaded (int: stored truncated, as In)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    __device__ static void load_b(unsigned int (&bf)[4][2], const unsigned short* bs, unsigned int n0,
                                  unsigned int lane, unsigned int ks)
    {
        #pragma unroll
        for (unsigned int nt = 0; nt < 4; ++nt) {  // lane l < 16: row k = l of the 8 columns
            unsigned int s = static_cast<unsigned int>(__cvta_generic_to_shared(
                &bs[(ks + lane % 16u) * B_ROW + n0 + nt * 8u]));
            asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                         : "=r"(bf[nt][0]), "=r"(bf[nt][1]) : "r"(s));
        }
    }
    __device__ static void mma(float (&d)[4], const unsigned int (&a)[4], const unsigned int (&b)[2])
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." MMA_TYPE "." MMA_TYPE ".f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
#endif
    __device__ static float dot(const unsigned short* a, const unsigned short* b, unsigned int i, unsigned int j,
                                unsigned int K, unsigned int N)
    {
        float acc = 0.0f;
        for (unsigned int k = 0; k < K; ++k)
            acc = acc + TO_FLOAT(a[i * K + k]) * TO_FLOAT(b[k * N + j]);
        return acc;
    }
};

__device__ inline void gemm_mma(const unsigned short* a, const unsigned short* b, float* c, unsigned int M,
                                unsigned int K, unsigned int N)
{
    gemm_mma_tiles<GemmMma16>(a, b, c, M, K, N);
}
