// Hand-written CUDA C++ equivalent of examples/gemm_f16.kern, for `python -m bench`.
// kernc ABI: a, b, c, then the size symbols M, K, N.   c[i, j] = sum over k of a[i, k] * b[k, j]
#define MMA_TYPE "f16"
#define TO_FLOAT f16_bits_to_float

// An f16's value from its bits (IEEE 754 binary16: 1 sign, 5 exponent, 10 fraction bits), exact.
__device__ inline float f16_bits_to_float(unsigned short h)
{
    unsigned int e = (h >> 10) & 31u, m = h & 1023u;
    float v = e == 0 ? ldexpf(static_cast<float>(m), -24)
            : e == 31 ? (m ? NAN : INFINITY) : ldexpf(static_cast<float>(m | 1024u), static_cast<int>(e) - 25);
    return (h >> 15) ? -v : v;
}
#include "gemm_mma.cuh"

// 128 x 128 tiles of c per block of 256 threads on tensor cores from sm_80 (gemm_mma.cuh says how).
extern "C" __global__ void __launch_bounds__(256)
gemm_f16(const unsigned short* a, const unsigned short* b, float* c, unsigned int M, unsigned int K,
         unsigned int N)
{
    gemm_mma(a, b, c, M, K, N);
}
