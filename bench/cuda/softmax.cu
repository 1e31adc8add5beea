// Hand-written CUDA C++ equivalent of examples/softmax.kern, for `python -m bench`: one block of
// 256 threads per row (rows g = blockIdx.x, += gridDim.x), thread tid handling j = tid + 256*c,
// the row max then the row sum of exp(x - max), each combined per thread in ascending j, then an
// xor butterfly of warp shuffles, then the 8 warps' values in warp order through shared memory:
// kern-map-groups' order, so the results are kernc's bit for bit. Same ABI (x, y, then R, N).
#include <math.h>

__device__ float maximum(float a, float b) {  // IEEE 754-2019 maximum (arith.maximumf)
    if (a != a) return a;
    if (b != b) return b;
    if (a == b) return signbit(a) ? b : a;
    return a > b ? a : b;
}

template <bool Max>
__device__ float block_reduce(float v, float* ws) {
    for (int off = 16; off >= 1; off /= 2) {
        float o = __shfl_xor_sync(0xffffffffu, v, off, 32);
        v = Max ? maximum(v, o) : v + o;
    }
    __syncthreads();
    if (threadIdx.x % 32u == 0u) ws[threadIdx.x / 32u] = v;
    __syncthreads();
    float out = ws[0];
    for (int w = 1; w < 8; ++w) out = Max ? maximum(out, ws[w]) : out + ws[w];
    return out;
}

extern "C" __global__ void __launch_bounds__(256)
softmax(const float* x, float* y, unsigned int R, unsigned int N)
{
    __shared__ float ws[8];
    for (unsigned int g = blockIdx.x; g < R; g += gridDim.x) {
        const float* row = x + g * N;
        float m = -INFINITY;
        for (unsigned int j = threadIdx.x; j < N; j += 256u) m = maximum(m, row[j]);
        m = block_reduce<true>(m, ws);
        float s = -0.0f;
        for (unsigned int j = threadIdx.x; j < N; j += 256u) s = s + expf(row[j] - m);
        s = block_reduce<false>(s, ws);
        for (unsigned int j = threadIdx.x; j < N; j += 256u) y[g * N + j] = expf(row[j] - m) / s;
    }
}
