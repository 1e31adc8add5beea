// Hand-written CUDA C++ equivalent of examples/conv2d_fwd.kern, for `python -m bench`.
// kernc ABI: x, w, y, sh, sw, ph, pw, dh, dw, then the size symbols N, H, W, C, K, R, S, OH, OW.
//   y[n, oh, ow, k] = sum over (r, s, c), in that order, of
//                     x[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c] * w[k, r, s, c]
// x NHWC, w KRSC, y NHWK; one output element per item. A tap in the padding reads 0 and is still
// added, as in kernc: the same float additions in the same order.
extern "C" __global__ void __launch_bounds__(256)
conv2d_fwd(const float* x, const float* w, float* y, int sh, int sw, int ph, int pw, int dh, int dw,
           unsigned int N, unsigned int H, unsigned int W, unsigned int C, unsigned int K, unsigned int R,
           unsigned int S, unsigned int OH, unsigned int OW)
{
    // a grid-stride loop: kernc launches its tiled kernel with one block per 64x64 tile of outputs
    for (unsigned int t = blockIdx.x * 256u + threadIdx.x; t < N * OH * OW * K; t += gridDim.x * 256u) {
        unsigned int k = t % K, q = t / K;  // t = ((n*OH + oh)*OW + ow)*K + k: y[n, oh, ow, k] is y[t]
        unsigned int ow = q % OW;
        q /= OW;
        unsigned int oh = q % OH, n = q / OH;
        const float* xn = x + n * H * W * C;
        const float* wk = w + k * R * S * C;
        float acc = 0.0f;
        for (unsigned int r = 0; r < R; ++r) {
            int h = (int)oh * sh + (int)r * dh - ph;
            for (unsigned int s = 0; s < S; ++s) {
                int iw = (int)ow * sw + (int)s * dw - pw;
                bool inside = h >= 0 && h < (int)H && iw >= 0 && iw < (int)W;
                for (unsigned int c = 0; c < C; ++c) {
                    float xv = inside ? xn[(h * W + iw) * C + c] : 0.0f;
                    acc += xv * wk[(r * S + s) * C + c];
                }
            }
        }
        y[t] = acc;
    }
}
