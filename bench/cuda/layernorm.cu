// Hand-written CUDA C++ equivalent of examples/layernorm.kern (kernel layernorm, the forward), for
// `python -m bench`: one block of 256 threads per row, thread tid handling j = tid + 256*c, the
// sums combined per thread in ascending j, an xor butterfly of warp shuffles, then the 8 warps'
// values in warp order through shared memory (kern-map-groups' order: kernc's bits).
// Same ABI (x, w, b, y, mean, rstd, eps, then R, N).
#include <math.h>

__device__ float block_sum(float v, float* ws) {
    for (int off = 16; off >= 1; off /= 2) v = v + __shfl_xor_sync(0xffffffffu, v, off, 32);
    __syncthreads();
    if (threadIdx.x % 32u == 0u) ws[threadIdx.x / 32u] = v;
    __syncthreads();
    float out = ws[0];
    for (int w = 1; w < 8; ++w) out = out + ws[w];
    return out;
}

extern "C" __global__ void __launch_bounds__(256)
layernorm(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
          float eps, unsigned int R, unsigned int N)
{
    __shared__ float ws[8];
    for (unsigned int g = blockIdx.x; g < R; g += gridDim.x) {
        const float* row = x + g * N;
        float s = -0.0f;
        for (unsigned int j = threadIdx.x; j < N; j += 256u) s = s + row[j];
        float m = block_sum(s, ws) / (float)N;
        float q = -0.0f;
        for (unsigned int j = threadIdx.x; j < N; j += 256u) { float d = row[j] - m; q = q + d * d; }
        float var = block_sum(q, ws) / (float)N;
        float r = 1.0f / sqrtf(var + eps);
        if (threadIdx.x == 0u) { mean[g] = m; rstd[g] = r; }
        for (unsigned int j = threadIdx.x; j < N; j += 256u) y[g * N + j] = (row[j] - m) * r * w[j] + b[j];
    }
}
