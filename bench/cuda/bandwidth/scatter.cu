// Hand-written CUDA C++ scatter-add for `python -m bench` (bench/gpu.py), the reference of
// bench/kern/scatter.kern: what a CUDA programmer writes for y[idx[t]] += v[t] with duplicate
// indices, one atomicAdd per thread (the hardware resolves the collisions in L2).
//
// ABI (launched raw through CuPy, every argument in this order):
//   scatter_add(const float* v,          // f32[n], the values added
//               float* y,                // f32[m], updated in place (m is not needed by the kernel)
//               const unsigned int* idx, // u32[n], every entry < m; duplicates allowed
//               unsigned int n)          // problem size
//   block: 256 threads (1-D), grid: ceil(n / 256) blocks; one thread per item t.
// The order of the additions into one y element is unspecified (floating-point atomics), so results
// match a sequential sum only up to rounding.
extern "C" __global__ void __launch_bounds__(256)
scatter_add(const float* __restrict__ v, float* y, const unsigned int* __restrict__ idx, unsigned int n)
{
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n)
        atomicAdd(&y[idx[t]], v[t]);
}
