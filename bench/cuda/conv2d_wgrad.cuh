// The body shared by bench/cuda/conv2d_wgrad.cu (f32 x and dy) and conv2d_wgrad_f16.cu (f16 x and
// dy passed as their bits): one filter element gw[k, r, s, c] per item, m = (n, oh, ow) in order,
// each value widened to f32 (exact) by conv_value, the products summed in f32. A tap in the padding
// or past the last image (n >= N) reads 0 and is still added, as in kernc.
#pragma once
#include "conv2d_fwd.cuh"  // conv_value

template <typename T>
__device__ inline void conv2d_wgrad_items(const T* x, const T* dy, float* gw, int OH, int OW, int sh, int sw,
                                          int ph, int pw, int dh, int dw, unsigned int N, unsigned int H,
                                          unsigned int W, unsigned int C, unsigned int K, unsigned int M,
                                          unsigned int R, unsigned int S)
{
    // a grid-stride loop: kernc launches its tiled kernel with one block per tile of outputs
    for (unsigned int t = blockIdx.x * 256u + threadIdx.x; t < K * R * S * C; t += gridDim.x * 256u) {
        unsigned int c = t % C, q = t / C;  // t = ((k*R + r)*S + s)*C + c: gw[k, r, s, c] is gw[t]
        unsigned int s = q % S;
        q /= S;
        unsigned int r = q % R, k = q / R;
        float acc = 0.0f;
        unsigned int n = 0;
        int oh = 0, ow = 0;  // m = (n, oh, ow), stepped with the loop instead of divided out each time
        for (unsigned int m = 0; m < M; ++m) {
            int h = oh * sh + (int)r * dh - ph, iw = ow * sw + (int)s * dw - pw;
            bool inside = n < N && h >= 0 && h < (int)H && iw >= 0 && iw < (int)W;
            float xv = inside ? conv_value(x[((n * H + h) * W + iw) * C + c]) : 0.0f;
            acc += conv_value(dy[m * K + k]) * xv;
            if (++ow == OW) {
                ow = 0;
                if (++oh == OH) {
                    oh = 0;
                    ++n;
                }
            }
        }
        gw[t] = acc;
    }
}
