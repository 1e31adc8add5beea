// Hand-written CUDA C++ equivalent of examples/conv2d_fwd_f16.kern, for `python -m bench`.
// kernc ABI: x, w, y, sh, sw, ph, pw, dh, dw, then the size symbols N, H, W, C, K, R, S, OH, OW.
//   y[n, oh, ow, k] = sum over (r, s, c), in that order, of
//                     x[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c] * w[k, r, s, c]
// x NHWC and w KRSC of f16 (passed as their bits), y NHWK f32; one output element per item, the f16
// values widened to f32 (exact), each product exact in f32 and summed in order: the CPU interpreter's
// order (of kernc's tensor-core kernel as of its CUDA-core tiles), so the two CPU runs agree bit for
// bit. This is the CUDA-core form; on a GPU the bench compares kernc's tensor-core kernel with the
// cuBLAS time of the im2col GEMM (cupy.matmul f16), not with this kernel. A tap in the padding reads
// 0 and is still added, as in kernc.

#include "conv2d_fwd.cuh"

extern "C" __global__ void __launch_bounds__(256)
conv2d_fwd_f16(const unsigned short* x, const unsigned short* w, float* y, int sh, int sw, int ph, int pw, int dh,
               int dw, unsigned int N, unsigned int H, unsigned int W, unsigned int C, unsigned int K,
               unsigned int R, unsigned int S, unsigned int OH, unsigned int OW)
{
    conv2d_fwd_items(x, w, y, sh, sw, ph, pw, dh, dw, N, H, W, C, K, R, S, OH, OW);  // (128x128 tiles in kernc)
}
