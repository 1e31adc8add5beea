// Hand-written CUDA C++ equivalent of examples/saxpy.kern, for `python -m bench`.
// Same ABI as kernc's kernel (params in source order, then the size symbol n), same block size
// (@block 256 -> __launch_bounds__(256)) and 32-bit unsigned index arithmetic (--index-bits 32).
extern "C" __global__ void __launch_bounds__(256)
saxpy(float a, const float* x, float* y, unsigned int n)
{
    unsigned int t = blockIdx.x * 256u + threadIdx.x;
    if (t >= n) return;
    y[t] += a * x[t];
}
