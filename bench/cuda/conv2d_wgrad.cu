// Hand-written CUDA C++ equivalent of examples/conv2d_wgrad.kern, for `python -m bench`.
// kernc ABI: x, dy, gw, OH, OW, sh, sw, ph, pw, dh, dw, then the size symbols N, H, W, C, K, M, R, S.
//   gw[k, r, s, c] = sum over m = (n, oh, ow) in [0, M), in order, of
//                    dy[m, k] * x[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c]
// x NHWC, dy its NHWK storage (M x K), gw KRSC; one filter element per item. A tap in the padding
// or past the last image (n >= N) reads 0 and is still added, as in kernc.
#include "conv2d_wgrad.cuh"

extern "C" __global__ void __launch_bounds__(256)
conv2d_wgrad(const float* x, const float* dy, float* gw, int OH, int OW, int sh, int sw, int ph, int pw, int dh,
             int dw, unsigned int N, unsigned int H, unsigned int W, unsigned int C, unsigned int K, unsigned int M,
             unsigned int R, unsigned int S)
{
    conv2d_wgrad_items(x, dy, gw, OH, OW, sh, sw, ph, pw, dh, dw, N, H, W, C, K, M, R, S);  // (64x64 tiles in kernc)
}
