// Hand-written CUDA C++ equivalent of examples/im2col_gather.kern, for `python -m bench`.
// kernc ABI: x, out, OH, OW, then the size symbols N, H, W, C, M, K.
// out (M x K, row-major) is the im2col matrix of the NHWC x for a 3x3 filter, stride 1, padding 1,
// dilation 1: out[m, k] = x[n, oh + r - 1, ow + s - 1, c] with m = (n, oh, ow) and k = (r, s, c)
// (last fastest), and 0 where that falls into the padding, where n >= N or where k >= 9*C.
extern "C" __global__ void __launch_bounds__(256)
im2col_gather(const float* x, float* out, int OH, int OW, unsigned int N, unsigned int H, unsigned int W,
              unsigned int C, unsigned int M, unsigned int K)
{
    unsigned int t = blockIdx.x * 256u + threadIdx.x;
    if (t >= M * K) return;
    unsigned int m = t / K, k = t % K;  // out[m, k] is out[t]
    unsigned int ow = m % (unsigned int)OW, oh = m / (unsigned int)OW % (unsigned int)OH;
    unsigned int n = m / ((unsigned int)OH * (unsigned int)OW);
    unsigned int r = k / (3u * C), s = k / C % 3u, c = k % C;
    int h = (int)(oh + r) - 1, w = (int)(ow + s) - 1;
    bool inside = k < 9u * C && n < N && h >= 0 && h < (int)H && w >= 0 && w < (int)W;
    out[t] = inside ? x[((n * H + h) * W + w) * C + c] : 0.0f;
}
