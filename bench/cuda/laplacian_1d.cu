// Hand-written CUDA C++ equivalent of examples/laplacian_1d.kern, for `python -m bench`.
// kernc ABI: u, k, out, then the size symbols n1, n.
//   d = k[t] * (u[t+1] - u[t]);  out[t] -= d;  out[t+1] += d      for every edge t < n
// kernc's `pair` accessors exchange neighbours through shared memory, and so does this kernel: the
// block stages u[t] so that u[t+1] comes from there (from global memory only at the block's edge),
// then stages d so that thread t adds both contributions to out[t] in one plain read-modify-write.
// Only the elements shared with a neighbouring block (out[t] at a block's first thread, out[t+1] at
// its last) and out[n] use atomicAdd, as in kernc. No early return: all threads reach the barriers.
extern "C" __global__ void __launch_bounds__(256)
laplacian_1d(const float* u, const float* k, float* out, unsigned int n1, unsigned int n)
{
    __shared__ float tile[256];
    unsigned int tid = threadIdx.x;
    unsigned int t = blockIdx.x * 256u + tid;
    bool active = t < n;
    float first = 0.0f, d = 0.0f;
    if (active) {
        first = u[t];
        tile[tid] = first;
    }
    __syncthreads();
    if (active) {
        float second = tid + 1u < 256u && t + 1u < n ? tile[tid + 1u] : u[t + 1u];
        d = k[t] * (second - first);
    }
    __syncthreads();  // every thread has read its neighbour before the tile is reused
    tile[tid] = d;
    __syncthreads();
    if (!active) return;
    float v = -d + (tid > 0u ? tile[tid - 1u] : 0.0f);  // + d of edge t-1, whose second node is t
    if (tid == 0u && t > 0u)
        atomicAdd(&out[t], v);  // the previous block's last thread adds to out[t] too
    else
        out[t] += v;
    if (tid == 255u || t + 1u == n)
        atomicAdd(&out[t + 1u], d);
}
