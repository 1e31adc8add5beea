// Hand-written CUDA C++ equivalent of examples/conv2d_dgrad.kern, for `python -m bench`.
// kernc ABI: dy, w, dx, sh, sw, ph, pw, dh, dw, then the size symbols N, OH, OW, K, R, S, C, H, W.
//   dx[n, ih, iw, c] = sum over (r, s, k), in that order, of dy[n, oh, ow, k] * w[k, r, s, c]
//                      where oh*sh = ih + ph - r*dh and ow*sw = iw + pw - s*dw
// dy NHWK, w KRSC, dx NHWC; one input element per item (a grid-stride loop: kernc launches its
// tiled kernel with one block per 64x64 tile). A tap with no output (not a multiple of the stride,
// or outside dy) reads 0 and is still added, as in kernc: the same float additions in the same order.
extern "C" __global__ void __launch_bounds__(256)
conv2d_dgrad(const float* dy, const float* w, float* dx, int sh, int sw, int ph, int pw, int dh, int dw,
             unsigned int N, unsigned int OH, unsigned int OW, unsigned int K, unsigned int R, unsigned int S,
             unsigned int C, unsigned int H, unsigned int W)
{
    for (unsigned int t = blockIdx.x * 256u + threadIdx.x; t < N * H * W * C; t += gridDim.x * 256u) {
        unsigned int c = t % C, q = t / C;  // t = ((n*H + ih)*W + iw)*C + c: dx[n, ih, iw, c] is dx[t]
        unsigned int iw = q % W;
        q /= W;
        unsigned int ih = q % H, n = q / H;
        float acc = 0.0f;
        for (unsigned int r = 0; r < R; ++r) {
            int th = (int)ih + ph - (int)r * dh;
            int oh = th % sh == 0 ? th / sh : -1;
            for (unsigned int s = 0; s < S; ++s) {
                int tw = (int)iw + pw - (int)s * dw;
                int ow = tw % sw == 0 ? tw / sw : -1;
                bool inside = oh >= 0 && oh < (int)OH && ow >= 0 && ow < (int)OW;
                const float* d = dy + ((n * OH + (unsigned int)oh) * OW + (unsigned int)ow) * K;
                for (unsigned int k = 0; k < K; ++k) {
                    float dv = inside ? d[k] : 0.0f;
                    acc += dv * w[((k * R + r) * S + s) * C + c];
                }
            }
        }
        dx[t] = acc;
    }
}
