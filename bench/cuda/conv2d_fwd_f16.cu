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

// An f16's value from its bits (IEEE 754 binary16: 1 sign, 5 exponent, 10 fraction bits), exact.
__device__ inline float f16_bits_to_float(unsigned short h)
{
    unsigned int e = (h >> 10) & 31u, m = h & 1023u;
    float v = e == 0 ? ldexpf(static_cast<float>(m), -24)
            : e == 31 ? (m ? NAN : INFINITY) : ldexpf(static_cast<float>(m | 1024u), static_cast<int>(e) - 25);
    return (h >> 15) ? -v : v;
}

extern "C" __global__ void __launch_bounds__(256)
conv2d_fwd_f16(const unsigned short* x, const unsigned short* w, float* y, int sh, int sw, int ph, int pw, int dh,
               int dw, unsigned int N, unsigned int H, unsigned int W, unsigned int C, unsigned int K,
               unsigned int R, unsigned int S, unsigned int OH, unsigned int OW)
{
    // a grid-stride loop: kernc launches its tensor-core kernel with one block per 128x128 tile
    for (unsigned int t = blockIdx.x * 256u + threadIdx.x; t < N * OH * OW * K; t += gridDim.x * 256u) {
        unsigned int k = t % K, q = t / K;  // t = ((n*OH + oh)*OW + ow)*K + k: y[n, oh, ow, k] is y[t]
        unsigned int ow = q % OW;
        q /= OW;
        unsigned int oh = q % OH, n = q / OH;
        const unsigned short* xn = x + n * H * W * C;
        const unsigned short* wk = w + k * R * S * C;
        float acc = 0.0f;
        for (unsigned int r = 0; r < R; ++r) {
            int h = (int)oh * sh + (int)r * dh - ph;
            for (unsigned int s = 0; s < S; ++s) {
                int iw = (int)ow * sw + (int)s * dw - pw;
                bool inside = h >= 0 && h < (int)H && iw >= 0 && iw < (int)W;
                for (unsigned int c = 0; c < C; ++c) {
                    float xv = inside ? f16_bits_to_float(xn[(h * W + iw) * C + c]) : 0.0f;
                    acc += xv * f16_bits_to_float(wk[(r * S + s) * C + c]);
                }
            }
        }
        y[t] = acc;
    }
}
