// The tiled tensor-core GEMM that bench/cuda/gemm_f16.cu, gemm_bf16.cu (through gemm_mma.cuh),
// gemm_i8.cu and gemm_tf32.cu share: the kernel kern-mma-contractions makes of the naive loop, one
// body for every operand type, which differs only in what its `Kind` says (below).
// kernc ABI: a, b, c, then the size symbols M, K, N.   c[i, j] = sum over k of a[i, k] * b[k, j]
// (row-major a: M x K, b: K x N of Kind::In; c: M x N of Kind::Acc, overwritten).
// With nvcc for sm_80 and later (__CUDA_ARCH__ >= 800): 128 x 128 tiles of c per block of 256 threads
// (2 x 4 warps of 64 x 32 outputs, 4 x 4 m16n8 accumulator fragments each), per chunk of 32 of k a
// 128 x 32 tile of a (rows of Kind::A_ROW elements) and the 32 x 128 tile of b (k-major, bs[k][n],
// rows of Kind::B_ROW, or n-major, bs[n][k], when Kind::B_N_MAJOR) through __shared__ memory, each
// value passed through Kind::stage as it is staged, 0 past the edges, loaded by all threads between
// two barriers; per step of 32 bytes of k (mma's k: 16 f16, 32 i8, 8 tf32) ldmatrix.x4 A fragments
// (mma_load_a), Kind::load_b's B fragments and Kind::mma on each of the 4 x 4 fragments; each thread
// stores its accumulators c0..c3 at (g + 8h, 2t + e) (PTX ISA, "Warp-level matrix multiply-accumulate
// instructions").
// Elsewhere (the CPU emulator, bench/cuda/emulate.h) each thread computes the 8 x 8 outputs
// (ty + 16u, tx + 16v) of the tile as Kind::dot(a, b, i, j, K, N).
//
// A Kind is a struct with
//   In, Acc                    the element types of a and b, and of the accumulators and c;
//   A_ROW, B_ROW, B_N_MAJOR    the __shared__ row lengths in elements (padded: no bank conflicts);
//   stage(v)                   the value a staged element holds, of the element loaded or 0 (v: that
//                              value promoted as `?:` does, int for In of 8 or 16 bits; e.g. rounded
//                              to tf32);
//   load_b(bf, bs, n0, lane, ks)  the 4 B fragments of the warp's columns n0.. at k offset ks
//                              (B_ROW, B_N_MAJOR and load_b: MmaBNMajor's, for an n-major b);
//   mma(d, a, b)               d += a * b on one m16n8 fragment (the mma.sync asm);
//   Acc dot(a, b, i, j, K, N)  the CPU fallback's c[i, j].
#pragma once

// The 4 A fragments (rows m0 + 16 mt .. of the warp) at k offset ks, by ldmatrix.x4: lane l
// addresses row l % 16, bytes 16 (l / 16) of the 16-byte-wide 8 x 8 matrices.
template <unsigned int ROW, class In>
__device__ inline void mma_load_a(unsigned int (&af)[4][4], const In* as, unsigned int m0, unsigned int lane,
                                  unsigned int ks)
{
    constexpr unsigned int per16 = 16u / sizeof(In);  // elements in 16 bytes (unsigned: 32-bit indices)
    #pragma unroll
    for (unsigned int mt = 0; mt < 4; ++mt) {
        unsigned int s = static_cast<unsigned int>(__cvta_generic_to_shared(
            &as[(m0 + mt * 16u + lane % 16u) * ROW + ks + lane / 16u * per16]));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(af[mt][0]), "=r"(af[mt][1]), "=r"(af[mt][2]), "=r"(af[mt][3]) : "r"(s));
    }
}

// The 4 B fragments (columns n0 + 8 nt ..) at k offset ks of an n-major bs (bs[n][k]: the PTX ISA's
// .col B rows, read by a plain ldmatrix.x2): lane l < 16 addresses row n = l % 8, bytes 16 (l / 8).
template <unsigned int ROW, class In>
__device__ inline void mma_load_b_n_major(unsigned int (&bf)[4][2], const In* bs, unsigned int n0,
                                          unsigned int lane, unsigned int ks)
{
    constexpr unsigned int per16 = 16u / sizeof(In);
    #pragma unroll
    for (unsigned int nt = 0; nt < 4; ++nt) {
        unsigned int s = static_cast<unsigned int>(__cvta_generic_to_shared(
            &bs[(n0 + nt * 8u + lane % 8u) * ROW + ks + lane % 16u / 8u * per16]));
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                     : "=r"(bf[nt][0]), "=r"(bf[nt][1]) : "r"(s));
    }
}

// The b layout and load_b of a Kind whose b tile is n-major with rows of ROW elements (a base of
// that Kind; a template, so g++ compiles the asm only if the GPU branch uses it).
template <class In, unsigned int ROW>
struct MmaBNMajor {
    static constexpr unsigned int B_ROW = ROW;
    static constexpr bool B_N_MAJOR = true;
    __device__ static void load_b(unsigned int (&bf)[4][2], const In* bs, unsigned int n0, unsigned int lane,
                                  unsigned int ks)
    {
        mma_load_b_n_major<ROW>(bf, bs, n0, lane, ks);
    }
};

template <class Kind>
__device__ inline void gemm_mma_tiles(const typename Kind::In* a, const typename Kind::In* b,
                                      typename Kind::Acc* c, unsigned int M, unsigned int K, unsigned int N)
{
    using In = typename Kind::In;
    using Acc = typename Kind::Acc;
    unsigned int tiles_n = (N + 127u) / 128u;
    unsigned int tiles = (M + 127u) / 128u * tiles_n;
    unsigned int tid = threadIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr unsigned int A_ROW = Kind::A_ROW, B_ROW = Kind::B_ROW;
    constexpr unsigned int k_step = 32u / sizeof(In);  // mma's k: 32 bytes of each operand's row
    __shared__ __align__(16) In as[128 * A_ROW];
    __shared__ __align__(16) In bs[(Kind::B_N_MAJOR ? 128 : 32) * B_ROW];
    unsigned int lane = tid % 32u, warp = tid / 32u, m0 = warp / 4u * 64u, n0 = warp % 4u * 32u;
    unsigned int g = lane / 4u, t = lane % 4u;
    for (unsigned int id = blockIdx.x; id < tiles; id += gridDim.x) {
        unsigned int i0 = id / tiles_n * 128u, j0 = id % tiles_n * 128u;
        Acc acc[4][4][4];
        #pragma unroll
        for (int mt = 0; mt < 4; ++mt)
            #pragma unroll
            for (int nt = 0; nt < 4; ++nt)
                #pragma unroll
                for (int r = 0; r < 4; ++r)
                    acc[mt][nt][r] = Acc(0);
        for (unsigned int k0 = 0; k0 < K; k0 += 32u) {
            __syncthreads();  // the previous chunk's ldmatrix reads are done
            #pragma unroll
            for (unsigned int r = 0; r < 16; ++r) {
                unsigned int e = tid + 256u * r;
                unsigned int ak = e % 32u, ai = e / 32u;  // a: lanes along k (its unit stride)
                as[ai * A_ROW + ak] = Kind::stage((i0 + ai < M && k0 + ak < K) ? a[(i0 + ai) * K + k0 + ak] : 0);
                unsigned int bj = e % 128u, bk = e / 128u;  // b: lanes along j
                bs[Kind::B_N_MAJOR ? bj * B_ROW + bk : bk * B_ROW + bj] =
                    Kind::stage((j0 + bj < N && k0 + bk < K) ? b[(k0 + bk) * N + j0 + bj] : 0);
            }
            __syncthreads();
            #pragma unroll
            for (unsigned int ks = 0; ks < 32u; ks += k_step) {
                unsigned int af[4][4], bf[4][2];
                mma_load_a<A_ROW>(af, as, m0, lane, ks);
                Kind::load_b(bf, bs, n0, lane, ks);
                #pragma unroll
                for (unsigned int mt = 0; mt < 4; ++mt)
                    #pragma unroll
                    for (unsigned int nt = 0; nt < 4; ++nt)
                        Kind::mma(acc[mt][nt], af[mt], bf[nt]);
            }
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
                c[i * N + j] = Kind::dot(a, b, i, j, K, N);
            }
    }
#endif
}
