// Hand-written CUDA C++ equivalent of examples/histogram.kern, for `python -m bench`: the CUDA
// samples' histogram256 scheme (a per-block copy of the 256 bins in shared memory updated with
// shared-memory atomics, then one global atomicAdd per non-zero bin per block).
// Same ABI as kernc's kernel (data, hist, then the size symbol n), same block size (256) and
// 32-bit unsigned index arithmetic. Counts are integers: any order of the atomics gives one result.
extern "C" __global__ void __launch_bounds__(256)
histogram(const unsigned char* data, unsigned int* hist, unsigned int n)
{
    __shared__ unsigned int bins[256];
    bins[threadIdx.x] = 0u;
    __syncthreads();
    unsigned int t = blockIdx.x * 256u + threadIdx.x;
    if (t < n) atomicAdd(&bins[data[t]], 1u);
    __syncthreads();
    unsigned int c = bins[threadIdx.x];
    if (c != 0u) atomicAdd(&hist[threadIdx.x], c);
}
