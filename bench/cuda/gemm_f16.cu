// Hand-written CUDA C++ equivalent of examples/gemm_f16.kern, for `python -m bench`.
// kernc ABI: a, b, c, then the size symbols M, K, N.   c[i, j] = sum over k of a[i, k] * b[k, j]
#define MMA_TYPE "f16"
#define TO_FLOAT f16_bits_to_float

#include "f16_bits.cuh"  // f16_bits_to_float
#include "gemm_mma.cuh"

// 128 x 128 tiles of c per block of 256 threads on tensor cores from sm_80 (gemm_mma.cuh says how).
extern "C" __global__ void __launch_bounds__(256)
gemm_f16(const unsigned short* a, const unsigned short* b, float* c, unsigned int M, unsigned int K,
         unsigned int N)
{
    gemm_mma(a, b, c, M, K, N);
}
