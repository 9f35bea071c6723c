// The emulator's scheduler and exports, included after the kernel source (see cuda_shim.h).
//
// A launch runs every block in order. Inside a block every thread is a fiber with its own
// stack; the scheduler resumes each ready thread in turn (round-robin) and it runs until it
// reaches __syncthreads() or returns. Once every thread has stopped, either all have returned
// (the block is done), or all wait at the same barrier (all are released), or some returned
// while others wait (barrier divergence: an error, not a hang). Stacks are allocated once, with
// a guard page below each, and reused by every block and launch.
//
// MTEMU_EXPORT(kernel) exports two C functions per kernel for ctypes:
//   int mtemu_launch_<kernel>(unsigned grid, unsigned block, void* const* args, char* err,
//                             size_t errlen)
//       args[i] points to the bytes of argument i (for a pointer parameter, to the pointer);
//       returns 0, or nonzero with a message in err.
//   const char* mtemu_signature_<kernel>()
//       one line per parameter, "kind:size:C++ type" with kind p (pointer), f (floating
//       point) or i (integer), deduced from the kernel's own function type.

#pragma once

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if !defined(__x86_64__) && !defined(MTEMU_USE_UCONTEXT)
#define MTEMU_USE_UCONTEXT 1
#endif
#ifdef MTEMU_USE_UCONTEXT
#include <ucontext.h>
#endif

namespace mtemu {

uint3 g_thread_idx, g_block_idx;
dim3 g_block_dim, g_grid_dim;

constexpr size_t kStackBytes = 64 * 1024;
constexpr size_t kGuardBytes = 4096;  // PROT_NONE below each stack: an overflow faults at once
constexpr unsigned kMaxBlock = 1024;  // CUDA's limit on threads per block

#ifndef MTEMU_USE_UCONTEXT
// A minimal x86-64 context switch: push the callee-saved registers on the current stack, save
// the stack pointer, load the other one, pop its registers and return into it. glibc's
// swapcontext also saves the signal mask (a system call per switch), which 300 blocks of 512
// threads cannot afford. The MXCSR and x87 control words are not switched: nothing here
// changes them, so every fiber shares the host's rounding mode.
extern "C" void mtemu_switch(void** save_sp, void* load_sp);
asm(R"(
    .text
    .p2align 4
    .hidden mtemu_switch
    .type mtemu_switch, @function
mtemu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size mtemu_switch, .-mtemu_switch
)");
#endif

enum class State : unsigned char { kReady, kWaiting, kDone };

struct Fiber {
    char* stack_top = nullptr;
    State state = State::kReady;
    const void* barrier_site = nullptr;  // return address of the __syncthreads() it waits at
#ifdef MTEMU_USE_UCONTEXT
    ucontext_t context;
#else
    void* sp = nullptr;
#endif
};

// One launch at a time per loaded library (the Python side holds a lock).
struct Scheduler {
    std::vector<Fiber> fibers;
    unsigned current = 0;
    void (*invoke)(const void*) = nullptr;  // runs the kernel with the launch's arguments
    const void* closure = nullptr;
#ifdef MTEMU_USE_UCONTEXT
    ucontext_t main_context;
#else
    void* main_sp = nullptr;
#endif
};

Scheduler g_sched;

inline void switch_to_scheduler(Fiber& self) {
#ifdef MTEMU_USE_UCONTEXT
    swapcontext(&self.context, &g_sched.main_context);
#else
    mtemu_switch(&self.sp, g_sched.main_sp);
#endif
}

[[noreturn]] void fiber_main() {
    Fiber& self = g_sched.fibers[g_sched.current];
    g_sched.invoke(g_sched.closure);
    self.state = State::kDone;
    switch_to_scheduler(self);
    __builtin_trap();  // a finished fiber is never resumed
}

__attribute__((noinline)) void syncthreads() {
    Fiber& self = g_sched.fibers[g_sched.current];
    self.barrier_site = __builtin_return_address(0);
    self.state = State::kWaiting;
    switch_to_scheduler(self);
}

// Stacks for n threads (grown on demand, kept for the process). false if mmap fails.
inline bool ensure_fibers(unsigned n) {
    while (g_sched.fibers.size() < n) {
        void* region = mmap(nullptr, kGuardBytes + kStackBytes, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (region == MAP_FAILED) return false;
        mprotect(region, kGuardBytes, PROT_NONE);
        Fiber fiber;
        fiber.stack_top = static_cast<char*>(region) + kGuardBytes + kStackBytes;
        g_sched.fibers.push_back(fiber);
    }
    return true;
}

// Point fiber t at the start of fiber_main on an empty stack.
inline void reset_fiber(Fiber& fiber) {
    fiber.state = State::kReady;
    fiber.barrier_site = nullptr;
#ifdef MTEMU_USE_UCONTEXT
    getcontext(&fiber.context);
    fiber.context.uc_stack.ss_sp = fiber.stack_top - kStackBytes;
    fiber.context.uc_stack.ss_size = kStackBytes;
    fiber.context.uc_link = nullptr;
    makecontext(&fiber.context, fiber_main, 0);
#else
    // The frame mtemu_switch pops: six zeroed registers, then fiber_main as the return
    // address. After `ret`, rsp = top - 8 (a fake return address of 0 is there), which is the
    // alignment a called function expects (rsp + 8 a multiple of 16).
    uintptr_t* sp = reinterpret_cast<uintptr_t*>(fiber.stack_top);
    *--sp = 0;
    *--sp = reinterpret_cast<uintptr_t>(&fiber_main);
    for (int i = 0; i < 6; ++i) *--sp = 0;
    fiber.sp = sp;
#endif
}

inline void resume(unsigned t) {
    g_sched.current = t;
    g_thread_idx = uint3{t, 0, 0};
    Fiber& fiber = g_sched.fibers[t];
#ifdef MTEMU_USE_UCONTEXT
    swapcontext(&g_sched.main_context, &fiber.context);
#else
    mtemu_switch(&g_sched.main_sp, fiber.sp);
#endif
}

// "function+0xoffset" for a barrier's return address, for error messages.
inline std::string describe_site(const void* site) {
    Dl_info info;
    char buf[256];
    if (dladdr(site, &info) && info.dli_sname) {
        snprintf(buf, sizeof buf, "%s+0x%zx", info.dli_sname,
                 static_cast<size_t>(static_cast<const char*>(site) -
                                     static_cast<const char*>(info.dli_saddr)));
    } else {
        snprintf(buf, sizeof buf, "%p", site);
    }
    return buf;
}

// Run block g_block_idx with n threads; 0, or 1 with a message in err.
inline int run_block(unsigned n, char* err, size_t errlen) {
    for (unsigned t = 0; t < n; ++t) reset_fiber(g_sched.fibers[t]);
    for (unsigned barrier = 0;; ++barrier) {
        for (unsigned t = 0; t < n; ++t) {
            if (g_sched.fibers[t].state == State::kReady) resume(t);
        }
        // Every thread has now stopped: it waits at a barrier or has returned.
        unsigned waiting = 0, first_waiting = n, first_done = n, other_site = n;
        for (unsigned t = 0; t < n; ++t) {
            const Fiber& fiber = g_sched.fibers[t];
            if (fiber.state == State::kDone) {
                if (first_done == n) first_done = t;
                continue;
            }
            ++waiting;
            if (first_waiting == n) {
                first_waiting = t;
            } else if (other_site == n &&
                       fiber.barrier_site != g_sched.fibers[first_waiting].barrier_site) {
                other_site = t;
            }
        }
        if (waiting == 0) return 0;  // every thread returned
        if (waiting != n) {
            snprintf(err, errlen,
                     "barrier divergence in block %u: %u of %u threads wait at __syncthreads() "
                     "(the block's barrier #%u; thread %u among them) while %u returned "
                     "(thread %u among them)",
                     g_block_idx.x, waiting, n, barrier + 1, first_waiting, n - waiting,
                     first_done);
            return 1;
        }
        if (other_site != n) {
            snprintf(err, errlen,
                     "barrier divergence in block %u: threads wait at different __syncthreads() "
                     "calls (thread %u at %s, thread %u at %s)",
                     g_block_idx.x, first_waiting,
                     describe_site(g_sched.fibers[first_waiting].barrier_site).c_str(),
                     other_site, describe_site(g_sched.fibers[other_site].barrier_site).c_str());
            return 1;
        }
        for (unsigned t = 0; t < n; ++t) g_sched.fibers[t].state = State::kReady;
    }
}

// __start_/__stop_ symbols the linker defines around the __shared__ section (null if the
// kernel file has no __shared__ variable, hence weak).
extern "C" char __start_mtemu_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_mtemu_shared[] __attribute__((weak, visibility("hidden")));

inline int run_grid(void (*invoke)(const void*), const void* closure, unsigned grid,
                    unsigned block, char* err, size_t errlen) {
    if (grid == 0 || block == 0 || block > kMaxBlock) {
        snprintf(err, errlen, "invalid launch configuration: grid %u, block %u (1..%u)", grid,
                 block, kMaxBlock);
        return 1;
    }
    if (!ensure_fibers(block)) {
        snprintf(err, errlen, "cannot allocate %u fiber stacks", block);
        return 1;
    }
    g_sched.invoke = invoke;
    g_sched.closure = closure;
    g_grid_dim = dim3(grid);
    g_block_dim = dim3(block);
    const size_t shared_bytes = static_cast<size_t>(__stop_mtemu_shared - __start_mtemu_shared);
    for (unsigned b = 0; b < grid; ++b) {
        g_block_idx = uint3{b, 0, 0};
        if (shared_bytes) memset(__start_mtemu_shared, 0xFF, shared_bytes);
        if (run_block(block, err, errlen)) return 1;
    }
    return 0;
}

// ---------------------------------------------------------------- arguments and signatures

template <typename T>
constexpr bool kSupportedParam = std::is_pointer_v<T> || std::is_arithmetic_v<T>;

template <typename... A>
struct Closure {
    void (*kernel)(A...);
    std::tuple<A...> args;

    static void invoke(const void* self) {
        const Closure* c = static_cast<const Closure*>(self);
        std::apply(c->kernel, c->args);
    }
};

template <typename T>
T load_arg(const void* bytes) {
    T value;
    memcpy(&value, bytes, sizeof(T));  // the Python side checked the size
    return value;
}

template <typename... A, size_t... I>
Closure<A...> make_closure(void (*kernel)(A...), void* const* args, std::index_sequence<I...>) {
    (void)args;  // unused for a kernel without parameters
    return Closure<A...>{kernel, std::tuple<A...>(load_arg<A>(args[I])...)};
}

template <typename... A>
int launch(void (*kernel)(A...), unsigned grid, unsigned block, void* const* args, char* err,
           size_t errlen) {
    static_assert((kSupportedParam<A> && ...),
                  "the emulator passes only pointer and arithmetic kernel parameters");
    const Closure<A...> closure = make_closure(kernel, args, std::index_sequence_for<A...>{});
    return run_grid(&Closure<A...>::invoke, &closure, grid, block, err, errlen);
}

// The spelling of T, from GCC's __PRETTY_FUNCTION__: "... [with T = long long int; ...]".
template <typename T>
std::string type_name() {
    const std::string pretty = __PRETTY_FUNCTION__;
    const size_t begin = pretty.find("T = ") + 4;
    const size_t end = pretty.find_first_of(";]", begin);
    return pretty.substr(begin, end - begin);
}

template <typename T>
void describe_param(std::string& out) {
    out += std::is_pointer_v<T> ? 'p' : std::is_floating_point_v<T> ? 'f' : 'i';
    out += ':' + std::to_string(sizeof(T)) + ':' + type_name<T>() + '\n';
}

template <typename... A>
const char* signature(void (*)(A...)) {
    static const std::string text = [] {
        std::string out;
        (describe_param<A>(out), ...);
        return out;
    }();
    return text.c_str();
}

}  // namespace mtemu

#define MTEMU_EXPORT(NAME)                                                                     \
    extern "C" __attribute__((visibility("default"))) int mtemu_launch_##NAME(                 \
        unsigned grid, unsigned block, void* const* args, char* err, size_t errlen) {          \
        return ::mtemu::launch(&NAME, grid, block, args, err, errlen);                         \
    }                                                                                          \
    extern "C" __attribute__((visibility("default"))) const char* mtemu_signature_##NAME() {   \
        return ::mtemu::signature(&NAME);                                                      \
    }
