// Hand-written CUDA C++ equivalent of examples/transpose.kern, for `python -m bench`.
// kernc ABI: a, b, then the size symbols R, C.   b[j, i] = a[i, j] for the R x C row-major a.
// The classic tiled transpose, shaped as kernc's coalescing pass stages it (see `kernc compile
// examples/transpose.kern --emit gpu --remarks`): 8 x 32 tiles of a pass through an 8 x 36 padded
// __shared__ tile (the 4 floats of padding make the column reads free of bank conflicts); 256
// threads; a 1-D grid of ceil(R*C / 256) blocks (kernc's launch) that walks the tiles with a
// grid-stride loop, since partial tiles at the edges make more tiles than blocks.
extern "C" __global__ void __launch_bounds__(256)
transpose(const float* a, float* b, unsigned int R, unsigned int C)
{
    __shared__ float tile[8][36];
    unsigned int tiles_c = (C + 31u) / 32u;
    unsigned int tiles = (R + 7u) / 8u * tiles_c;
    unsigned int ly = threadIdx.x / 32u, lx = threadIdx.x % 32u;  // load: a warp reads 32 floats of a row of a
    unsigned int sy = threadIdx.x / 8u, sx = threadIdx.x % 8u;    // store: 8 threads write 8 floats of a row of b
    for (unsigned int id = blockIdx.x; id < tiles; id += gridDim.x) {
        unsigned int i0 = id / tiles_c * 8u, j0 = id % tiles_c * 32u;
        if (i0 + ly < R && j0 + lx < C)
            tile[ly][lx] = a[(i0 + ly) * C + j0 + lx];
        __syncthreads();
        if (i0 + sx < R && j0 + sy < C)
            b[(j0 + sy) * R + i0 + sx] = tile[sx][sy];
        __syncthreads();  // the tile is read before the next iteration overwrites it
    }
}
