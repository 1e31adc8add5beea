// The body shared by bench/cuda/conv2d_fwd.cu (f32 x and w) and conv2d_fwd_f16.cu (f16 x and w
// passed as their bits): one output element y[n, oh, ow, k] per item, the taps (r, s, c) in order,
// each value widened to f32 (exact) by conv_value, the products summed in f32. A tap in the padding
// reads 0 and is still added, as in kernc: the same float additions in the same order.
#pragma once
#include "f16_bits.cuh"  // f16_bits_to_float

__device__ inline float conv_value(float v) { return v; }
__device__ inline float conv_value(unsigned short h) { return f16_bits_to_float(h); }

template <typename T>
__device__ inline void conv2d_fwd_items(const T* x, const T* w, float* y, int sh, int sw, int ph, int pw, int dh,
                                        int dw, unsigned int N, unsigned int H, unsigned int W, unsigned int C,
                                        unsigned int K, unsigned int R, unsigned int S, unsigned int OH,
                                        unsigned int OW)
{
    // a grid-stride loop: kernc launches its tiled kernel with one block per tile of outputs
    for (unsigned int t = blockIdx.x * 256u + threadIdx.x; t < N * OH * OW * K; t += gridDim.x * 256u) {
        unsigned int k = t % K, q = t / K;  // t = ((n*OH + oh)*OW + ow)*K + k: y[n, oh, ow, k] is y[t]
        unsigned int ow = q % OW;
        q /= OW;
        unsigned int oh = q % OH, n = q / OH;
        const T* xn = x + n * H * W * C;
        const T* wk = w + k * R * S * C;
        float acc = 0.0f;
        for (unsigned int r = 0; r < R; ++r) {
            int h = (int)oh * sh + (int)r * dh - ph;
            for (unsigned int s = 0; s < S; ++s) {
                int iw = (int)ow * sw + (int)s * dw - pw;
                bool inside = h >= 0 && h < (int)H && iw >= 0 && iw < (int)W;
                for (unsigned int c = 0; c < C; ++c) {
                    float xv = inside ? conv_value(xn[(h * W + iw) * C + c]) : 0.0f;
                    acc += xv * conv_value(wk[(r * S + s) * C + c]);
                }
            }
        }
        y[t] = acc;
    }
}
