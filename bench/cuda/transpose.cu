// Hand-written CUDA C++ equivalent of examples/transpose.kern, for `python -m bench`.
// kernc ABI: a, b, then the size symbols R, C.   b[j, i] = a[i, j] for the R x C row-major a.
// The classic tiled transpose, shaped as kernc's coalescing pass stages it (see `kernc compile
// examples/transpose.kern --emit gpu --remarks`): 32 x 32 tiles of a pass through a 32 x 33 padded
// __shared__ tile (the padding column makes the column reads free of bank conflicts); 256 threads,
// each moving 4 elements (rows ty + 8k of the tile: the 4 loads are in flight together); a 1-D grid
// of one block per tile (kernc's launch of a kernel with tiles) that walks the tiles with a
// grid-stride loop, so any grid is correct.
extern "C" __global__ void __launch_bounds__(256)
transpose(const float* a, float* b, unsigned int R, unsigned int C)
{
    __shared__ float tile[32][33];
    unsigned int tiles_c = (C + 31u) / 32u;
    unsigned int tiles = (R + 31u) / 32u * tiles_c;
    // a warp reads 32 floats of a row of a (row ty + 8k of the tile) and writes 32 floats of a row
    // of b (column ty + 8k of the tile)
    unsigned int ty = threadIdx.x / 32u, tx = threadIdx.x % 32u;
    for (unsigned int id = blockIdx.x; id < tiles; id += gridDim.x) {
        unsigned int i0 = id / tiles_c * 32u, j0 = id % tiles_c * 32u;
        float v[4];
        #pragma unroll
        for (unsigned int k = 0; k < 4; ++k) {
            unsigned int r = ty + 8u * k;
            v[k] = (i0 + r < R && j0 + tx < C) ? a[(i0 + r) * C + j0 + tx] : 0.0f;
        }
        #pragma unroll
        for (unsigned int k = 0; k < 4; ++k)
            tile[ty + 8u * k][tx] = v[k];
        __syncthreads();
        #pragma unroll
        for (unsigned int k = 0; k < 4; ++k) {
            unsigned int c = ty + 8u * k;
            if (i0 + tx < R && j0 + c < C)
                b[(j0 + c) * R + i0 + tx] = tile[tx][c];
        }
        __syncthreads();  // the tile is read before the next iteration overwrites it
    }
}
