// Hand-written CUDA C++ equivalent of examples/conv2d_wgrad_f16.kern, for `python -m bench`.
// kernc ABI: x, dy, gw, OH, OW, sh, sw, ph, pw, dh, dw, then the size symbols N, H, W, C, K, M, R, S.
//   gw[k, r, s, c] = sum over m = (n, oh, ow) in [0, M), in order, of
//                    dy[m, k] * x[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c]
// x NHWC and dy in its NHWK storage (M x K) of f16 (passed as their bits), gw KRSC f32; one filter
// element per item, the products exact in f32 and summed in order (the CPU interpreter's order of
// kernc's tensor-core kernel: bit for bit on the CPU). The CUDA-core form: on a GPU the bench
// compares kernc with the cuBLAS time of the im2col GEMM instead. A tap in the padding or past the
// last image (n >= N) reads 0 and is still added, as in kernc.

#include "conv2d_wgrad.cuh"

extern "C" __global__ void __launch_bounds__(256)
conv2d_wgrad_f16(const unsigned short* x, const unsigned short* dy, float* gw, int OH, int OW, int sh, int sw,
                 int ph, int pw, int dh, int dw, unsigned int N, unsigned int H, unsigned int W, unsigned int C,
                 unsigned int K, unsigned int M, unsigned int R, unsigned int S)
{
    conv2d_wgrad_items(x, dy, gw, OH, OW, sh, sw, ph, pw, dh, dw, N, H, W, C, K, M, R, S);  // (128x128 tiles in kernc)
}
