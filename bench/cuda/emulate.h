// CPU emulation of the CUDA C++ that the kernels in bench/cuda/ use, so that they can be tested
// without a GPU (bench/emulate.py force-includes this header: g++ -std=c++20 -include emulate.h).
//
// Execution model: the blocks of a grid run one after another; the threads of one block run
// concurrently, one std::thread each. That is what makes `__shared__` simple: it is `static`
// storage, shared by the threads of the running block. __syncthreads() is a std::barrier per block;
// warp shuffles exchange values through a per-warp slot array between two waits on a std::barrier
// per warp, so every lane of the warp must call them (a full mask, as all kernels here use).
// A thread that returns drops out of its block's and warp's barriers, as an exited GPU thread does.
// A __syncthreads() that some live thread of the block never reaches (undefined behaviour on the GPU)
// waits forever here.
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>  // sqrtf, fminf, fmaxf, ... in the global namespace, as CUDA has them
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
// __restrict__ needs no definition: g++ understands it.

struct uint3 {
    unsigned int x, y, z;
};

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};

struct alignas(16) float4 {
    float x, y, z, w;
};

inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

constexpr int warpSize = 32;

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

namespace emu {

struct Warp {
    std::barrier<> sync;
    std::uint64_t slot[warpSize];  // one value per lane, 8 bytes: any shuffled type fits
    explicit Warp(std::ptrdiff_t lanes) : sync(lanes) {}
};

struct Block {
    std::barrier<> sync;
    std::vector<std::unique_ptr<Warp>> warps;
    explicit Block(unsigned threads) : sync(threads) {
        for (unsigned first = 0; first < threads; first += warpSize)
            warps.push_back(std::make_unique<Warp>(std::min<unsigned>(warpSize, threads - first)));
    }
};

inline thread_local Block* block = nullptr;
inline thread_local unsigned lane = 0;
inline thread_local unsigned warp = 0;

// The value `v` of lane `src`, or the caller's own `v` when `own` (a source outside the warp or
// the width segment: what CUDA returns there).
template <class T>
T shuffle(T v, unsigned src, bool own) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(std::uint64_t));
    Warp& w = *block->warps[warp];
    std::memcpy(&w.slot[lane], &v, sizeof(T));
    w.sync.arrive_and_wait();  // every lane has published its value
    T out = v;
    if (!own)
        std::memcpy(&out, &w.slot[src], sizeof(T));
    w.sync.arrive_and_wait();  // every lane has read before a slot can be overwritten
    return out;
}

}  // namespace emu

inline void __syncthreads() { emu::block->sync.arrive_and_wait(); }

template <class T>
T __shfl_sync(unsigned, T v, int src, int width = warpSize) {
    return emu::shuffle(v, emu::lane / width * width + unsigned(src) % width, false);
}

template <class T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width = warpSize) {
    return emu::shuffle(v, emu::lane - delta, emu::lane % width < delta);
}

template <class T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = warpSize) {
    return emu::shuffle(v, emu::lane + delta, emu::lane % width + delta >= unsigned(width));
}

template <class T>
T __shfl_xor_sync(unsigned, T v, int lane_mask, int width = warpSize) {
    unsigned src = emu::lane ^ unsigned(lane_mask);
    return emu::shuffle(v, src, src >= unsigned(warpSize) || src / width > emu::lane / width);
}

// atomicAdd returns the old value, as CUDA's does.
inline float atomicAdd(float* p, float v) { return std::atomic_ref<float>(*p).fetch_add(v); }
inline int atomicAdd(int* p, int v) { return std::atomic_ref<int>(*p).fetch_add(v); }
inline unsigned int atomicAdd(unsigned int* p, unsigned int v) {
    return std::atomic_ref<unsigned int>(*p).fetch_add(v);
}

namespace emu {

// One character per kernel parameter, for emulate.py to check the arguments: 'p' a pointer, else
// 'f' (floating) or 'i' (integer) followed by its size in bytes.
template <class... P>
const char* signature(void (*)(P...)) {
    static const std::string text = [] {
        std::string s;
        ((s += std::is_pointer_v<P> ? std::string("p")
                                    : (std::is_floating_point_v<P> ? "f" : "i") + std::to_string(sizeof(P))),
         ...);
        return s;
    }();
    return text.c_str();
}

// args[i] points to the value of parameter i (cuLaunchKernel's convention).
template <class... P, std::size_t... I>
std::tuple<P...> unpack(void** args, std::index_sequence<I...>) {
    return std::tuple<P...>{*static_cast<std::remove_cv_t<P>*>(args[I])...};
}

// Runs kernel<<<grid, block>>>(args...). Returns 0, or 1 with a message in err (e.g. the system
// refused to start a thread).
template <class... P>
int launch(void (*kernel)(P...), const unsigned* g, const unsigned* b, void** args, char* err, std::size_t errlen) {
    const std::tuple<P...> params = unpack<P...>(args, std::index_sequence_for<P...>{});
    const dim3 grid(g[0], g[1], g[2]), blk(b[0], b[1], b[2]);
    const unsigned threads = blk.x * blk.y * blk.z;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                Block state(threads);
                // 0: wait, 1: run, 2: abort. Threads start only once all exist, so that a failure to
                // start one cannot leave the others waiting at a barrier forever.
                std::atomic<int> go{0};
                std::vector<std::thread> pool;
                pool.reserve(threads);
                try {
                    for (unsigned i = 0; i < threads; ++i)
                        pool.emplace_back([&, i] {
                            go.wait(0);
                            if (go.load() != 1)
                                return;
                            threadIdx = {i % blk.x, i / blk.x % blk.y, i / (blk.x * blk.y)};
                            blockIdx = {bx, by, bz};
                            blockDim = blk;
                            gridDim = grid;
                            emu::block = &state;
                            emu::lane = i % warpSize;
                            emu::warp = i / warpSize;
                            std::apply(kernel, params);
                            state.warps[emu::warp]->sync.arrive_and_drop();
                            state.sync.arrive_and_drop();
                        });
                } catch (const std::exception& e) {
                    go = 2;
                    go.notify_all();
                    for (auto& t : pool)
                        t.join();
                    std::snprintf(err, errlen, "block (%u, %u, %u): starting thread %zu of %u failed: %s", bx, by,
                                  bz, pool.size(), threads, e.what());
                    return 1;
                }
                go = 1;
                go.notify_all();
                for (auto& t : pool)
                    t.join();
            }
    return 0;
}

}  // namespace emu
