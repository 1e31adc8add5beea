// Hand-written CUDA C++ equivalent of examples/gemm_i8.kern, for `python -m bench`.
// kernc ABI: a, b, c, then the size symbols M, K, N.   c[i, j] = sum over k of i32(a[i, k]) * i32(b[k, j])
// (row-major a: M x K, b: K x N of signed i8; c: M x N i32, overwritten).
// With nvcc for sm_80 and later (__CUDA_ARCH__ >= 800) it is the kernel kern-mma-contractions makes
// of the naive loop (`kernc compile examples/gemm_i8.kern --emit gpu --remarks`): 128 x 128 tiles of c
// per block of 256 threads (2 x 4 warps of 64 x 32 outputs, 4 x 4 m16n8 accumulator fragments each),
// per chunk of 32 of k a 128 x 32 tile of a and the 32 x 128 tile of b stored n-major (bs[n][k]: the
// PTX ISA's .col B rows, read by a plain ldmatrix; .trans moves 16-bit elements only) through
// __shared__ memory, rows padded by 16 bytes (48-byte rows: ldmatrix without bank conflicts), 0 past
// the edges; per chunk one k32 step: ldmatrix.x4 (A), ldmatrix.x2 (B) and
// mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 (PTX ISA 9.7.14.5.10; .satfinite as
// MLIR's lowering writes it); each thread stores its accumulators c0..c3 at (g + 8h, 2t + e).
// Elsewhere (the CPU emulator, bench/cuda/emulate.h) each output sums k ascending, wrapping in 32 bits as
// the kernel's `+=` does: exact, so bitwise kernc's CPU result.
extern "C" __global__ void __launch_bounds__(256)
gemm_i8(const signed char* a, const signed char* b, int* c, unsigned int M, unsigned int K, unsigned int N)
{
    unsigned int tiles_n = (N + 127u) / 128u;
    unsigned int tiles = (M + 127u) / 128u * tiles_n;
    unsigned int tid = threadIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    __shared__ __align__(16) signed char as[128 * 48];
    __shared__ __align__(16) signed char bs[128 * 48];
    unsigned int lane = tid % 32u, warp = tid / 32u, m0 = warp / 4u * 64u, n0 = warp % 4u * 32u;
    unsigned int g = lane / 4u, t = lane % 4u;
    for (unsigned int id = blockIdx.x; id < tiles; id += gridDim.x) {
        unsigned int i0 = id / tiles_n * 128u, j0 = id % tiles_n * 128u;
        int acc[4][4][4];
        #pragma unroll
        for (int mt = 0; mt < 4; ++mt)
            #pragma unroll
            for (int nt = 0; nt < 4; ++nt)
                #pragma unroll
                for (int r = 0; r < 4; ++r)
                    acc[mt][nt][r] = 0;
        for (unsigned int k0 = 0; k0 < K; k0 += 32u) {
            __syncthreads();  // the previous chunk's ldmatrix reads are done
            #pragma unroll
            for (unsigned int r = 0; r < 16; ++r) {
                unsigned int e = tid + 256u * r;
                unsigned int ak = e % 32u, ai = e / 32u;  // a: lanes along k (its unit stride)
                as[ai * 48u + ak] = (i0 + ai < M && k0 + ak < K) ? a[(i0 + ai) * K + k0 + ak] : 0;
                unsigned int bj = e % 128u, bk = e / 128u;  // b: lanes along j, stored n-major
                bs[bj * 48u + bk] = (j0 + bj < N && k0 + bk < K) ? b[(k0 + bk) * N + j0 + bj] : 0;
            }
            __syncthreads();
            unsigned int af[4][4], bf[4][2];
            #pragma unroll
            for (unsigned int mt = 0; mt < 4; ++mt) {  // lane l: row l % 16, bytes 16 (l / 16)
                unsigned int s = static_cast<unsigned int>(__cvta_generic_to_shared(
                    &as[(m0 + mt * 16u + lane % 16u) * 48u + lane / 16u * 16u]));
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(af[mt][0]), "=r"(af[mt][1]), "=r"(af[mt][2]), "=r"(af[mt][3]) : "r"(s));
            }
            #pragma unroll
            for (unsigned int nt = 0; nt < 4; ++nt) {  // lane l < 16: row n = l % 8, bytes 16 (l / 8)
                unsigned int s = static_cast<unsigned int>(__cvta_generic_to_shared(
                    &bs[(n0 + nt * 8u + lane % 8u) * 48u + lane % 16u / 8u * 16u]));
                asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                             : "=r"(bf[nt][0]), "=r"(bf[nt][1]) : "r"(s));
            }
            #pragma unroll
            for (unsigned int mt = 0; mt < 4; ++mt)
                #pragma unroll
                for (unsigned int nt = 0; nt < 4; ++nt)
                    asm volatile("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 "
                                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                                 : "+r"(acc[mt][nt][0]), "+r"(acc[mt][nt][1]), "+r"(acc[mt][nt][2]),
                                   "+r"(acc[mt][nt][3])
                                 : "r"(af[mt][0]), "r"(af[mt][1]), "r"(af[mt][2]), "r"(af[mt][3]),
                                   "r"(bf[nt][0]), "r"(bf[nt][1]));
        }
        #pragma unroll
        for (unsigned int mt = 0; mt < 4; ++mt)
            #pragma unroll
            for (unsigned int h = 0; h < 2; ++h)
                #pragma unroll
                for (unsigned int nt = 0; nt < 4; ++nt)
                    #pragma unroll
                    for (unsigned int e = 0; e < 2; ++e) {
                        unsigned int i = i0 + m0 + mt * 16u + g + 8u * h, j = j0 + n0 + nt * 8u + 2u * t + e;
                        if (i < M && j < N)
                            c[i * N + j] = acc[mt][nt][2 * h + e];
                    }
    }
#else
    unsigned int tx = tid % 16u, ty = tid / 16u;  // each thread the 8 x 8 outputs (ty + 16u, tx + 16v)
    for (unsigned int id = blockIdx.x; id < tiles; id += gridDim.x) {
        unsigned int i0 = id / tiles_n * 128u, j0 = id % tiles_n * 128u;
        for (unsigned int u = 0; u < 8; ++u)
            for (unsigned int v = 0; v < 8; ++v) {
                unsigned int i = i0 + ty + 16u * u, j = j0 + tx + 16u * v;
                if (i >= M || j >= N)
                    continue;
                unsigned int acc = 0;  // (unsigned: wraps in 32 bits, as the kernel's i32 +=)
                for (unsigned int k = 0; k < K; ++k)
                    acc += static_cast<unsigned int>(static_cast<int>(a[i * K + k]) * static_cast<int>(b[k * N + j]));
                c[i * N + j] = static_cast<int>(acc);
            }
    }
#endif
}
