// CUDA built-ins for compiling kernels/*.cu as host C++ (g++) in the CPU test emulator.
//
// Included before the .cu file. It defines only what CUDA device code gets without an include
// (qualifiers, the thread/block indices, __syncthreads, <math.h>), so a kernel that compiles
// here unchanged also compiles with NVRTC. The scheduler behind it is launch.h, included after.
//
// Not supported (a compile error, not a silent misbehaviour): dynamic shared memory
// (`extern __shared__`), atomics, warp intrinsics, printf.

#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)

// All threads of a block are fibers of one OS thread and blocks run one after another, so one
// static instance is per block. The section lets the scheduler poison every __shared__ variable
// before each block (bytes 0xFF: NaN as a float, -1 as an int), so reading shared memory
// written by nobody in this block shows. `used` keeps GCC's IPA from treating the variable as
// private to its function (it could otherwise move accesses across the opaque __syncthreads).
#define __shared__ static __attribute__((section("mtemu_shared"), used))

struct uint3 {
    unsigned int x, y, z;
};

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
        : x(vx), y(vy), z(vz) {}
};

namespace mtemu {

// Set by the scheduler before it resumes a thread; kernels read them through the const
// accessors below, so `threadIdx.x = 0` fails to compile as it does with nvcc. Globals with
// external linkage: the compiler reloads them after every opaque call (a barrier).
extern uint3 g_thread_idx, g_block_idx;
extern dim3 g_block_dim, g_grid_dim;

inline const uint3& thread_idx() { return g_thread_idx; }
inline const uint3& block_idx() { return g_block_idx; }
inline const dim3& block_dim() { return g_block_dim; }
inline const dim3& grid_dim() { return g_grid_dim; }

// The barrier: suspends the calling thread until every live thread of the block arrives.
// Never inlined, so its return address identifies the __syncthreads() call site.
__attribute__((noinline)) void syncthreads();

}  // namespace mtemu

#define threadIdx (::mtemu::thread_idx())
#define blockIdx (::mtemu::block_idx())
#define blockDim (::mtemu::block_dim())
#define gridDim (::mtemu::grid_dim())
#define __syncthreads() ::mtemu::syncthreads()
