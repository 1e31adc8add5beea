// Hand-written CUDA C++ equivalent of examples/conv2d_fwd.kern, for `python -m bench`.
// kernc ABI: x, w, y, sh, sw, ph, pw, dh, dw, then the size symbols N, H, W, C, K, R, S, OH, OW.
//   y[n, oh, ow, k] = sum over (r, s, c), in that order, of
//                     x[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c] * w[k, r, s, c]
// x NHWC, w KRSC, y NHWK; one output element per item. A tap in the padding reads 0 and is still
// added, as in kernc: the same float additions in the same order.
#include "conv2d_fwd.cuh"

extern "C" __global__ void __launch_bounds__(256)
conv2d_fwd(const float* x, const float* w, float* y, int sh, int sw, int ph, int pw, int dh, int dw,
           unsigned int N, unsigned int H, unsigned int W, unsigned int C, unsigned int K, unsigned int R,
           unsigned int S, unsigned int OH, unsigned int OW)
{
    conv2d_fwd_items(x, w, y, sh, sw, ph, pw, dh, dw, N, H, W, C, K, R, S, OH, OW);  // (64x64 tiles in kernc)
}
