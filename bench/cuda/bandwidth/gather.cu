// Hand-written CUDA C++ gather for `python -m bench` (bench/gpu.py), the reference of
// bench/kern/gather.kern: what a CUDA programmer writes for out[t] = x[idx[t]], a plain indexed load
// per thread (read-only data marked __restrict__ so nvcc may use the non-coherent load path).
//
// ABI (launched raw through CuPy, every argument in this order):
//   gather(const float* x,          // f32[m], the gathered table (m is not needed by the kernel)
//          const unsigned int* idx, // u32[n], every entry < m
//          float* out,              // f32[n], written
//          unsigned int n)          // problem size
//   block: 256 threads (1-D), grid: ceil(n / 256) blocks; one thread per item t.
// 32-bit unsigned index arithmetic, like kernc's default --index-bits 32.
extern "C" __global__ void __launch_bounds__(256)
gather(const float* __restrict__ x, const unsigned int* __restrict__ idx, float* __restrict__ out,
       unsigned int n)
{
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n)
        out[t] = x[idx[t]];
}
