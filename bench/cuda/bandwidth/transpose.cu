// Hand-written CUDA C++ matrix transposes for `python -m bench` (bench/gpu.py), the references of
// examples/transpose.kern compiled without (naive) and with (coalesced) kernc's view staging.
//
// Both compute b = a^T for a row-major R x C matrix a and a row-major C x R matrix b:
//   b[j * R + i] = a[i * C + j]   for 0 <= i < R, 0 <= j < C,
// with 32-bit unsigned index arithmetic (R * C < 2^32), like kernc's default --index-bits 32.
//
// ABI (launched raw through CuPy, every argument in this order, both kernels):
//   (const float* a, float* b, unsigned int R, unsigned int C)
//   block: (32, 8) threads, 2-D;
//   transpose_naive: grid (ceil(C / 32), ceil(R / 8)), one element per thread;
//   transpose_tiled: grid (ceil(C / 32), ceil(R / 32)), one 32 x 32 tile per block, 4 elements per
//                    thread.
// Any R and C work: partial tiles at the right and bottom edges are bounds-checked.

#define TILE 32      // tile edge: one warp spans one tile row
#define TILE_ROWS 8  // blockDim.y: each thread moves TILE / TILE_ROWS elements

// One thread per element: a warp reads 32 consecutive floats of a row of a (coalesced, 4 sectors)
// and writes them down a column of b (32 rows apart: 32 sectors per warp store).
extern "C" __global__ void __launch_bounds__(TILE * TILE_ROWS)
transpose_naive(const float* __restrict__ a, float* __restrict__ b, unsigned int R, unsigned int C)
{
    unsigned int j = blockIdx.x * TILE + threadIdx.x;
    unsigned int i = blockIdx.y * TILE_ROWS + threadIdx.y;
    if (i < R && j < C)
        b[j * R + i] = a[i * C + j];
}

// The classic shared-memory transpose: a block copies a 32 x 32 tile of a into shared memory with
// row-wise (coalesced) loads, then writes the transposed tile to b with row-wise (coalesced) stores,
// reading the tile by columns. The tile is padded to 33 columns so that a column of 32 floats falls
// into 32 different banks (with 32 columns all of them would hit one bank: a 32-way conflict).
extern "C" __global__ void __launch_bounds__(TILE * TILE_ROWS)
transpose_tiled(const float* __restrict__ a, float* __restrict__ b, unsigned int R, unsigned int C)
{
    __shared__ float tile[TILE][TILE + 1];

    unsigned int col = blockIdx.x * TILE + threadIdx.x;  // column of a
    unsigned int row0 = blockIdx.y * TILE;               // first row of a in this tile
    for (unsigned int k = threadIdx.y; k < TILE; k += TILE_ROWS) {
        unsigned int row = row0 + k;
        if (row < R && col < C)
            tile[k][threadIdx.x] = a[row * C + col];
    }
    __syncthreads();

    // The same tile seen from b: its rows are columns blockIdx.x * TILE + k of a, its columns rows
    // row0 + threadIdx.x of a, so consecutive threads store consecutive floats of a row of b.
    unsigned int bcol = row0 + threadIdx.x;  // column of b = row of a
    for (unsigned int k = threadIdx.y; k < TILE; k += TILE_ROWS) {
        unsigned int brow = blockIdx.x * TILE + k;  // row of b = column of a
        if (brow < C && bcol < R)
            b[brow * R + bcol] = tile[threadIdx.x][k];
    }
}
