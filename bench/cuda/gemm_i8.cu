// Hand-written CUDA C++ equivalent of examples/gemm_i8.kern, for `python -m bench`.
// kernc ABI: a, b, c, then the size symbols M, K, N.   c[i, j] = sum over k of i32(a[i, k]) * i32(b[k, j])
// (row-major a: M x K, b: K x N of signed i8; c: M x N i32, overwritten).
// With nvcc for sm_80 and later (__CUDA_ARCH__ >= 800) it is the kernel kern-mma-contractions makes
// of the naive loop (`kernc compile examples/gemm_i8.kern --emit gpu --remarks`): gemm_mma_tiles.cuh's
// tiles, with the 32 x 128 tile of b stored n-major (bs[n][k]: the PTX ISA's .col B rows, read by a
// plain ldmatrix; .trans moves 16-bit elements only) in __shared__ memory, rows padded by 16 bytes
// (48-byte rows: ldmatrix without bank conflicts); per chunk one k32 step: ldmatrix.x4 (A),
// ldmatrix.x2 (B) and mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 (PTX ISA
// 9.7.14.5.10; .satfinite as MLIR's lowering writes it).
// Elsewhere (the CPU emulator, bench/cuda/emulate.h) each output sums k ascending, wrapping in 32 bits as
// the kernel's `+=` does: exact, so bitwise kernc's CPU result.
#include "gemm_mma_tiles.cuh"

struct GemmI8 : MmaBNMajor<signed char, 48> {
    using In = signed char;
    using Acc = int;
    static constexpr unsigned int A_ROW = 48;
    template <class T>
    __device__ static T stage(T x) { return x; }  // as loaded (int: stored truncated, as In)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    __device__ static void mma(int (&d)[4], const unsigned int (&a)[4], const unsigned int (&b)[2])
    {
        asm volatile("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
#endif
    __device__ static int dot(const signed char* a, const signed char* b, unsigned int i, unsigned int j,
                              unsigned int K, unsigned int N)
    {
        unsigned int acc = 0;  // (unsigned: wraps in 32 bits, as the kernel's i32 +=)
        for (unsigned int k = 0; k < K; ++k)
            acc += static_cast<unsigned int>(static_cast<int>(a[i * K + k]) * static_cast<int>(b[k * N + j]));
        return static_cast<int>(acc);
    }
};

extern "C" __global__ void __launch_bounds__(256)
gemm_i8(const signed char* a, const signed char* b, int* c, unsigned int M, unsigned int K, unsigned int N)
{
    gemm_mma_tiles<GemmI8>(a, b, c, M, K, N);
}
