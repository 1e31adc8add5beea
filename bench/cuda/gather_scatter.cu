// Hand-written CUDA C++ equivalent of examples/gather_scatter.kern, for `python -m bench`.
// kernc ABI: x, idx, s, off, st, out, dst, acc, then the size symbols m, n, k, m2 (unused ones too).
//   g = x[idx[t]];  out[dst[t]] = 2*g + s[off + t*st];  if idx[t] is even: acc[off + t*st] += g
extern "C" __global__ void __launch_bounds__(256)
gather_scatter(const float* x, const unsigned int* idx, const float* s, int off, int st,
               float* out, const unsigned int* dst, float* acc,
               unsigned int m, unsigned int n, unsigned int k, unsigned int m2)
{
    unsigned int t = blockIdx.x * 256u + threadIdx.x;
    if (t >= n) return;
    unsigned int i = idx[t];
    float g = x[i];
    unsigned int j = (unsigned int)off + t * (unsigned int)st;
    out[dst[t]] = 2.0f * g + s[j];
    if (i % 2u == 0u) acc[j] += g;
}
