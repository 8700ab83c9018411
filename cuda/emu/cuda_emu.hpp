// A CPU stand-in for the few CUDA features the sort kernels (kernels/msm_sort.cu) and the
// NTT kernels (kernels/ntt.cu, over emu/small_fr.hpp's field) use, so that they compile as
// host C++20 and run on any machine: cuda/tests/emu.rs checks their output there (CI has
// no GPU; the GPU tests check the same kernels on the device).
//
// A launch runs its blocks one after another, and a block's threads as fibers (ucontext) on
// one OS thread, each until it waits: __syncthreads (and a warp's exchange) is a barrier
// that switches to the next thread until all of the block's live threads have arrived, and
// a thread that returns early leaves the barriers (as a finished GPU thread does). Shared memory:
// a kernel's `__shared__` arrays become function statics (one block runs at a time), and
// its `extern __shared__` array (rewritten by the test to `EMU_DYNAMIC_SHARED(type, name)`)
// points at a buffer the launch fills with a junk pattern, as the GPU leaves it
// uninitialized. atomicAdd is a plain add (one thread runs at a time); __shfl_up_sync exchanges
// through a per-warp slot array between two per-warp barriers (every lane of the warp must call it, as every
// call in the kernels does with a full mask). Nothing here models timing or memory order
// beyond the barriers: it checks what the kernels compute, not how fast.
#pragma once
#include <cstddef>
#include <cstdint>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <ucontext.h>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
struct uint2 {
    uint32_t x, y;
};
struct alignas(16) uint4 {
    uint32_t x, y, z, w;
};
inline uint2 make_uint2(uint32_t x, uint32_t y)
{
    return {x, y};
}

template<class A, class B>
inline std::common_type_t<A, B> min(A a, B b)
{
    using T = std::common_type_t<A, B>;
    return (T)a < (T)b ? (T)a : (T)b;
}

// The running thread's indices (set by the scheduler before it resumes a thread).
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace emu {
constexpr size_t STACK_BYTES = 64 << 10;

// A barrier over the live threads of a group (the block, or a warp).
struct Barrier {
    unsigned alive = 0, waiting = 0;
    uint64_t phase = 0;
};

struct Block {
    std::function<void()> body;
    std::vector<ucontext_t> ctx;
    std::vector<bool> done;
    ucontext_t sched;
    unsigned current = 0;
    Barrier bar;
    std::vector<Barrier> warp_bar;
    std::vector<std::array<uint64_t, 32>> warp_slot;
};
inline Block* block;
inline std::vector<uint32_t> dynamic_shared;
inline std::unique_ptr<char[]> stacks;
inline size_t stacks_for = 0;

inline void yield()
{
    swapcontext(&block->ctx[block->current], &block->sched);
}

inline void wait(Barrier& b)
{
    const uint64_t phase = b.phase;
    if (++b.waiting == b.alive) {
        b.waiting = 0;
        b.phase++;
        return;
    }
    while (b.phase == phase)
        yield();
}

// A thread leaves barrier b: the others may be waiting for it alone.
inline void leave(Barrier& b)
{
    b.alive--;
    if (b.waiting != 0 && b.waiting == b.alive) {
        b.waiting = 0;
        b.phase++;
    }
}

inline void thread_main()
{
    block->body();
    const unsigned t = block->current;
    leave(block->bar);
    leave(block->warp_bar[t / 32]);
    block->done[t] = true;
    // Returns to the scheduler through uc_link.
}
} // namespace emu

#define EMU_DYNAMIC_SHARED(type, name) type* name = reinterpret_cast<type*>(emu::dynamic_shared.data())

inline void __syncthreads()
{
    emu::wait(emu::block->bar);
}

inline unsigned long long __brevll(unsigned long long x)
{
    unsigned long long r = 0;
    for (int i = 0; i < 64; i++, x >>= 1)
        r = (r << 1) | (x & 1);
    return r;
}

inline uint32_t atomicAdd(uint32_t* p, uint32_t v)
{
    const uint32_t old = *p;
    *p = old + v;
    return old;
}

template<class T>
inline T __shfl_up_sync(unsigned, T v, unsigned delta)
{
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
    const unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32;
    auto& slot = emu::block->warp_slot[w];
    uint64_t mine = 0;
    std::memcpy(&mine, &v, sizeof(T));
    slot[lane] = mine;
    emu::wait(emu::block->warp_bar[w]);
    T r = v;
    if (lane >= delta)
        std::memcpy(&r, &slot[lane - delta], sizeof(T));
    emu::wait(emu::block->warp_bar[w]);
    return r;
}

namespace emu {
// Runs kernel(args...) over `grid` blocks of `threads` threads (1 to 1024; a last warp may
// be partial) with `smem` bytes of dynamic shared memory.
template<class K, class... A>
void launch(dim3 grid, unsigned threads, size_t smem, K kernel, A... args)
{
    if (threads == 0 || threads > 1024)
        throw std::runtime_error("emu::launch: 1 to 1024 threads");
    if (stacks_for < threads) {
        stacks.reset(new char[threads * STACK_BYTES]);
        stacks_for = threads;
    }
    gridDim = grid;
    blockDim = dim3{threads, 1, 1};
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                dynamic_shared.assign(smem / 4 + 1, 0xA5A5A5A5u);
                Block b;
                b.body = [&] { kernel(args...); };
                b.ctx.resize(threads);
                b.done.assign(threads, false);
                b.bar.alive = threads;
                const unsigned warps = (threads + 31) / 32;
                b.warp_bar.resize(warps);
                for (unsigned w = 0; w < warps; w++)
                    b.warp_bar[w].alive = min(32u, threads - 32 * w);
                b.warp_slot.resize(warps);
                block = &b;
                blockIdx = dim3{bx, by, bz};
                for (unsigned t = 0; t < threads; t++) {
                    getcontext(&b.ctx[t]);
                    b.ctx[t].uc_stack.ss_sp = stacks.get() + t * STACK_BYTES;
                    b.ctx[t].uc_stack.ss_size = STACK_BYTES;
                    b.ctx[t].uc_link = &b.sched;
                    makecontext(&b.ctx[t], thread_main, 0);
                }
                // Round robin: each live thread runs until it waits or returns.
                for (unsigned live = threads; live != 0;) {
                    live = 0;
                    for (unsigned t = 0; t < threads; t++) {
                        if (b.done[t])
                            continue;
                        b.current = t;
                        threadIdx = dim3{t, 0, 0};
                        swapcontext(&b.sched, &b.ctx[t]);
                        live += !b.done[t];
                    }
                }
                block = nullptr;
            }
}
} // namespace emu
