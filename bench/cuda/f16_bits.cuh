// An f16's value from its bits, for the CUDA C++ equivalents that take f16 arrays as their bits
// (bench/cuda/gemm_f16.cu, conv2d_fwd_f16.cu, conv2d_wgrad_f16.cu).
#pragma once

// IEEE 754 binary16: 1 sign, 5 exponent, 10 fraction bits; exact in f32.
__device__ inline float f16_bits_to_float(unsigned short h)
{
    unsigned int e = (h >> 10) & 31u, m = h & 1023u;
    float v = e == 0 ? ldexpf(static_cast<float>(m), -24)
            : e == 31 ? (m ? NAN : INFINITY) : ldexpf(static_cast<float>(m | 1024u), static_cast<int>(e) - 25);
    return (h >> 15) ? -v : v;
}
