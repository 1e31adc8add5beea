// Hand-written CUDA C++ equivalent of examples/gemm_bf16.kern, for `python -m bench`.
// kernc ABI: a, b, c, then the size symbols M, K, N.   c[i, j] = sum over k of a[i, k] * b[k, j]
#define MMA_TYPE "bf16"
#define TO_FLOAT bf16_bits_to_float

// A bf16's value from its bits: the upper half of an f32's, exact.
__device__ inline float bf16_bits_to_float(unsigned short h)
{
    unsigned int bits = static_cast<unsigned int>(h) << 16;
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}
#include "gemm_mma.cuh"

// 128 x 128 tiles of c per block of 256 threads on tensor cores from sm_80 (gemm_mma.cuh says how).
extern "C" __global__ void __launch_bounds__(256)
gemm_bf16(const unsigned short* a, const unsigned short* b, float* c, unsigned int M, unsigned int K,
          unsigned int N)
{
    gemm_mma(a, b, c, M, K, N);
}
