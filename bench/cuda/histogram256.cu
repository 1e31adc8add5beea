// CUDA C++ reference of the histogram row of `python -m bench` (bench/histogram.py), written for
// this project in the scheme of the CUDA samples' histogram256: each block keeps its own 256 bins in
// shared memory, updated with shared-memory atomics while its threads stride over the input one
// 32-bit word (four bytes) at a time, then adds every non-zero bin to the global histogram with one
// atomicAdd. Any grid of 256-thread blocks is correct (a grid-stride loop); bench/histogram.py
// launches a few blocks per SM. `data` must be 4-byte aligned (cudaMalloc memory is 256-byte
// aligned). Counts add onto what `hist` holds.
extern "C" __global__ void __launch_bounds__(256)
histogram256(const unsigned char* data, unsigned int* hist, unsigned int n)
{
    __shared__ unsigned int bins[256];
    bins[threadIdx.x] = 0u;
    __syncthreads();
    const unsigned int* words = reinterpret_cast<const unsigned int*>(data);
    const unsigned int nwords = n / 4u;
    for (unsigned int w = blockIdx.x * 256u + threadIdx.x; w < nwords; w += gridDim.x * 256u) {
        unsigned int v = words[w];
        atomicAdd(&bins[v & 0xffu], 1u);
        atomicAdd(&bins[(v >> 8) & 0xffu], 1u);
        atomicAdd(&bins[(v >> 16) & 0xffu], 1u);
        atomicAdd(&bins[v >> 24], 1u);
    }
    if (blockIdx.x == 0u && threadIdx.x < n % 4u)  // the last n % 4 bytes
        atomicAdd(&bins[data[nwords * 4u + threadIdx.x]], 1u);
    __syncthreads();
    unsigned int c = bins[threadIdx.x];
    if (c != 0u) atomicAdd(&hist[threadIdx.x], c);
}
