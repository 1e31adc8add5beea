// Hand-written CUDA C++ equivalent of examples/edge_update.kern, for `python -m bench`.
// kernc ABI: pos, src, dst, w, force, energy, the shared_indices tables of src (unique, target, perm,
// count), the same four of dst, then the size symbols V, E. kernc's launcher builds the tables on the
// host (backend/shared_indices.py); per block of 256 edges: its distinct indices in ascending order,
// each edge's rank among them (packed with the block's count: rank | count << 16), a stable sorting
// permutation (each entry packed with its rank: thread | rank << 16), how many distinct indices
// there are.
// src and dst themselves are not read here, only their tables.
//   p = pos[src[e]];  force[dst[e]] += w[e] * p;  energy[0] += w[e] * |p|^2      for every edge e < E
// pos and force are (V, 4) arrays whose column 3 is padding: 16-byte rows, one float4 load each (pos
// must be 16-byte aligned, as cudaMalloc memory is). The memory strategy is kernc's:
// - shared(src): the block loads each distinct pos row once into shared memory;
// - shared_sum(dst): the block's contributions are put in dst order (perm), summed over runs of equal
//   dst by a segmented warp scan and then across warps, and the last entry of each run does one
//   atomicAdd per component;
// - sum: a warp-shuffle reduction, one partial per warp in shared memory, one atomicAdd per block.
// No early return: every thread takes part in the barriers and shuffles.
#define FULL_MASK 0xffffffffu

extern "C" __global__ void __launch_bounds__(256)
edge_update(const float* pos, const unsigned int* src, const unsigned int* dst, const float* w, float* force,
            float* energy, const unsigned int* src_unique, const unsigned int* src_target,
            const unsigned int* src_perm, const unsigned int* src_count, const unsigned int* dst_unique,
            const unsigned int* dst_target, const unsigned int* dst_perm, const unsigned int* dst_count,
            unsigned int V, unsigned int E)
{
    __shared__ float rows[3][256];          // the block's distinct pos rows, as struct of arrays
    __shared__ float contrib[3][256];       // w * p of each thread's edge
    __shared__ unsigned int run_key[256];   // dst rank of each entry, in dst order
    __shared__ float warp_total[4][8];      // per warp: its last run's partial sum (3), its energy
    unsigned int tid = threadIdx.x, lane = tid % 32u, warp = tid / 32u;
    unsigned int base = blockIdx.x * 256u, t = base + tid;
    unsigned int edges = E - base < 256u ? E - base : 256u;  // edges of this block
    bool active = tid < edges;

    // src_target[t] = rank | count << 16: this thread's row and the block's number of distinct rows.
    // Every thread stages src_unique[t] (row 0 past the count: never read), loaded next to
    // src_target[t], so that the pos load waits for one table load, not two.
    unsigned int row = active ? src_target[t] : 0u;
    unsigned int distinct = src_unique[t];
    float4 p = reinterpret_cast<const float4*>(pos)[tid < row >> 16 ? distinct : 0u];
    rows[0][tid] = p.x;
    rows[1][tid] = p.y;
    rows[2][tid] = p.z;
    // dst_perm[t]: entry tid in dst order is the edge of thread dst_perm[t] & 0xffff, whose dst
    // rank is dst_perm[t] >> 16 (loaded here, before the barriers, not after them)
    unsigned int entry = active ? dst_perm[t] : 0u;
    __syncthreads();
    float f[3] = {0.0f, 0.0f, 0.0f}, e = 0.0f;
    if (active) {
        row &= 0xffffu;
        float p0 = rows[0][row], p1 = rows[1][row], p2 = rows[2][row], we = w[t];
        f[0] = we * p0;
        f[1] = we * p1;
        f[2] = we * p2;
        e = we * (p0 * p0 + p1 * p1 + p2 * p2);
    }
    for (int i = 0; i < 3; ++i)
        contrib[i][tid] = f[i];
    __syncthreads();

    // Entries past the block's edges get a key beyond every rank, so that no run continues into
    // them. Every entry loads its run's dst row now (row 0 past the edges), not at the run's end.
    unsigned int key = 256u;
    float v[3] = {0.0f, 0.0f, 0.0f};
    if (active) {
        unsigned int from = entry & 0xffffu;
        key = entry >> 16;
        for (int i = 0; i < 3; ++i)
            v[i] = contrib[i][from];
    }
    unsigned int target_row = dst_unique[base + (active ? key : 0u)];
    run_key[tid] = key;
    // segmented inclusive scan: v becomes the sum of its run's entries in this warp up to this lane
    for (unsigned int d = 1; d < 32u; d *= 2u) {
        bool same = __shfl_up_sync(FULL_MASK, key, d) == key && lane >= d;
        for (int i = 0; i < 3; ++i) {
            float other = __shfl_up_sync(FULL_MASK, v[i], d);
            if (same)
                v[i] += other;
        }
    }
    for (unsigned int d = 16; d > 0; d /= 2u)
        e += __shfl_xor_sync(FULL_MASK, e, d);
    if (lane == 31u)
        for (int i = 0; i < 3; ++i)
            warp_total[i][warp] = v[i];
    if (lane == 0u)
        warp_total[3][warp] = e;
    __syncthreads();

    unsigned int next = tid + 1u < edges ? run_key[tid + 1u] : ~0u;
    if (active && next != key) {  // the last entry of its run: add the run's part in earlier warps
        for (int prev = (int)warp - 1; prev >= 0 && run_key[prev * 32 + 31] == key; --prev)
            for (int i = 0; i < 3; ++i)
                v[i] += warp_total[i][prev];
        float* out = force + 4u * target_row;
        for (int i = 0; i < 3; ++i)
            atomicAdd(&out[i], v[i]);
    }
    if (warp == 0u) {
        float sum = lane < 8u ? warp_total[3][lane] : 0.0f;
        for (unsigned int d = 16; d > 0; d /= 2u)
            sum += __shfl_xor_sync(FULL_MASK, sum, d);
        if (lane == 0u)
            atomicAdd(energy, sum);
    }
}
