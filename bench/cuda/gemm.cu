// Hand-written CUDA C++ equivalent of examples/gemm.kern, for `python -m bench`.
// kernc ABI: a, b, c, then the size symbols M, K, N.   c[i, j] = sum over k, ascending, of a[i, k] * b[k, j]
// (row-major a: M x K, b: K x N, c: M x N; c overwritten).
// The classic shared-memory tiled GEMM, shaped as kern-tile-contractions tiles the naive kernel (see
// `kernc compile examples/gemm.kern --emit gpu --remarks`): 64 x 64 tiles of c per block of 256
// threads, each thread the 4 x 4 outputs (ty + 16u, tx + 16v); per chunk of 16 of k, a 64 x 16 tile
// of a (stored k-major, rows padded to 66 floats: the warp's stores along k hit 32 banks) and a
// 16 x 64 tile of b pass through __shared__ memory, loaded by all threads (4 elements each) between
// two barriers; a 1-D grid of one block per tile (kernc's launch of a kernel with tiles) walks the
// tiles with a grid-stride loop. Each output sums k ascending, a product then a sum per step (no
// FMA contraction is implied: compile with --fmad=false to compare bit for bit).
extern "C" __global__ void __launch_bounds__(256)
gemm(const float* a, const float* b, float* c, unsigned int M, unsigned int K, unsigned int N)
{
    __shared__ float as[16][66];
    __shared__ float bs[16][64];
    unsigned int tiles_n = (N + 63u) / 64u;
    unsigned int tiles = (M + 63u) / 64u * tiles_n;
    unsigned int tid = threadIdx.x, tx = tid % 16u, ty = tid / 16u;
    for (unsigned int id = blockIdx.x; id < tiles; id += gridDim.x) {
        unsigned int i0 = id / tiles_n * 64u, j0 = id % tiles_n * 64u;
        float acc[4][4];
        #pragma unroll
        for (unsigned int u = 0; u < 4; ++u)
            #pragma unroll
            for (unsigned int v = 0; v < 4; ++v)
                acc[u][v] = 0.0f;
        for (unsigned int k0 = 0; k0 < K; k0 += 16u) {
            __syncthreads();  // the previous chunk's reads of the tiles are done
            #pragma unroll
            for (unsigned int r = 0; r < 4; ++r) {
                unsigned int e = tid + 256u * r;
                unsigned int ak = e % 16u, ai = e / 16u;  // a: lanes along k (its unit stride)
                as[ak][ai] = (i0 + ai < M && k0 + ak < K) ? a[(i0 + ai) * K + k0 + ak] : 0.0f;
                unsigned int bj = e % 64u, bk = e / 64u;  // b: lanes along j
                bs[bk][bj] = (j0 + bj < N && k0 + bk < K) ? b[(k0 + bk) * N + j0 + bj] : 0.0f;
            }
            __syncthreads();
            unsigned int kn = K - k0 < 16u ? K - k0 : 16u;
            for (unsigned int kk = 0; kk < kn; ++kk) {
                float av[4], bv[4];
                #pragma unroll
                for (unsigned int u = 0; u < 4; ++u)
                    av[u] = as[kk][ty + 16u * u];
                #pragma unroll
                for (unsigned int v = 0; v < 4; ++v)
                    bv[v] = bs[kk][tx + 16u * v];
                #pragma unroll
                for (unsigned int u = 0; u < 4; ++u)
                    #pragma unroll
                    for (unsigned int v = 0; v < 4; ++v)
                        acc[u][v] = acc[u][v] + av[u] * bv[v];
            }
        }
        #pragma unroll
        for (unsigned int u = 0; u < 4; ++u)
            #pragma unroll
            for (unsigned int v = 0; v < 4; ++v)
                if (i0 + ty + 16u * u < M && j0 + tx + 16u * v < N)
                    c[(i0 + ty + 16u * u) * N + j0 + tx + 16u * v] = acc[u][v];
    }
}
