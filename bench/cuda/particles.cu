// Hand-written CUDA C++ equivalent of examples/particles.kern, for `python -m bench`.
// pos, vel, new_pos, new_vel are struct-of-arrays (3 rows of n); @block(128).
// sqrtf is IEEE-rounded under nvcc's defaults (-prec-sqrt=true), as kernc's sqrt is (sqrt.rn.f32).
extern "C" __global__ void __launch_bounds__(128)
particles(const float* pos, const float* vel, float dt, float vmax,
          float* new_pos, float* new_vel, float* speed, float* energy, unsigned int n)
{
    unsigned int t = blockIdx.x * 128u + threadIdx.x;
    if (t >= n) return;
    float v[3], p[3];
    float s2 = 0.0f;
    for (int k = 0; k < 3; ++k) {
        v[k] = vel[k * n + t];
        s2 += v[k] * v[k];
    }
    float s = sqrtf(s2);
    float scale = s > vmax ? vmax / fmaxf(s, 1e-30f) : 1.0f;
    for (int k = 0; k < 3; ++k) {
        v[k] *= scale;
        p[k] = pos[k * n + t] + dt * v[k];
    }
    if (p[2] < 0.0f) {
        p[2] = -p[2];
        v[2] = -v[2];
    }
    for (int k = 0; k < 3; ++k) {
        new_pos[k * n + t] = p[k];
        new_vel[k * n + t] = v[k];
    }
    speed[t] = fminf(s, vmax);
    energy[t] += 0.5f * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}
