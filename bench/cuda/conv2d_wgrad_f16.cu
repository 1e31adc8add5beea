// Hand-written CUDA C++ equivalent of examples/conv2d_wgrad_f16.kern, for `python -m bench`.
// kernc ABI: x, dy, gw, OH, OW, sh, sw, ph, pw, dh, dw, then the size symbols N, H, W, C, K, M, R, S.
//   gw[k, r, s, c] = sum over m = (n, oh, ow) in [0, M), in order, of
//                    dy[m, k] * x[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c]
// x NHWC and dy in its NHWK storage (M x K) of f16 (passed as their bits), gw KRSC f32; one filter
// element per item, the products exact in f32 and summed in order (the CPU interpreter's order of
// kernc's tensor-core kernel: bit for bit on the CPU). The CUDA-core form: on a GPU the bench
// compares kernc with the cuBLAS time of the im2col GEMM instead. A tap in the padding or past the
// last image (n >= N) reads 0 and is still added, as in kernc.

// An f16's value from its bits (IEEE 754 binary16: 1 sign, 5 exponent, 10 fraction bits), exact.
__device__ inline float f16_bits_to_float(unsigned short h)
{
    unsigned int e = (h >> 10) & 31u, m = h & 1023u;
    float v = e == 0 ? ldexpf(static_cast<float>(m), -24)
            : e == 31 ? (m ? NAN : INFINITY) : ldexpf(static_cast<float>(m | 1024u), static_cast<int>(e) - 25);
    return (h >> 15) ? -v : v;
}

extern "C" __global__ void __launch_bounds__(256)
conv2d_wgrad_f16(const unsigned short* x, const unsigned short* dy, float* gw, int OH, int OW, int sh, int sw,
                 int ph, int pw, int dh, int dw, unsigned int N, unsigned int H, unsigned int W, unsigned int C,
                 unsigned int K, unsigned int M, unsigned int R, unsigned int S)
{
    // a grid-stride loop: kernc launches its tensor-core kernel with one block per 128x128 tile
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
            float xv = inside ? f16_bits_to_float(x[((n * H + h) * W + iw) * C + c]) : 0.0f;
            acc += f16_bits_to_float(dy[m * K + k]) * xv;
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
