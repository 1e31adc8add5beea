// Hand-written CUDA C++ equivalent of examples/histogram.kern, for `python -m bench`, launched as
// kernc launches its kernel: kern-privatize-atomics gives each block a copy of the 256 bins in
// shared memory, updated with shared-memory atomics, then one global atomicAdd per non-zero bin per
// block (the CUDA samples' histogram256 scheme); each block runs tiles of 4096 items (16 per thread,
// thread tid the items tile*4096 + k*256 + tid), tiles blockIdx.x, blockIdx.x + gridDim.x, ...
// Same ABI as kernc's kernel (data, hist, then the size symbol n), same block size (256) and
// 32-bit unsigned index arithmetic. Counts are integers: any order of the atomics gives one result.
extern "C" __global__ void __launch_bounds__(256)
histogram(const unsigned char* data, unsigned int* hist, unsigned int n)
{
    __shared__ unsigned int bins[256];
    bins[threadIdx.x] = 0u;
    __syncthreads();
    unsigned int tiles = n / 4096u + (n % 4096u != 0u);
    for (unsigned int tile = blockIdx.x; tile < tiles; tile += gridDim.x)
        for (unsigned int k = 0; k < 16u; ++k) {
            unsigned int t = tile * 4096u + k * 256u + threadIdx.x;
            if (t < n) atomicAdd(&bins[data[t]], 1u);
        }
    __syncthreads();
    unsigned int c = bins[threadIdx.x];
    if (c != 0u) atomicAdd(&hist[threadIdx.x], c);
}
