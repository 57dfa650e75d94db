/* osprey_prof.h — the public API of the Osprey profiler shim (libospreyprof).
 *
 * The profiler is off unless OSPREY_PROFILE=<path> is set when the process starts; then
 * ospreyd samples every registered thread (a SIGPROF whose handler records the thread's stack;
 * no thread of the profiler runs in the process) and writes the raw profile to <path> when
 * the process exits. When the profiler is inactive — the variable is unset, the platform
 * has no collector (Windows, Wasm), or activation failed — every call here is a no-op.
 *
 * Link the static archive into a runtime and call these from its thread entry points, or
 * LD_PRELOAD the shared library to profile any native binary without recompiling it (it
 * registers the main thread and every thread started with pthread_create by itself).
 */
#ifndef OSPREY_PROF_H
#define OSPREY_PROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define OSP_PROF_API __declspec(dllexport)
#else
#define OSP_PROF_API __attribute__((visibility("default")))
#endif

/* Read OSPREY_PROFILE and OSPREY_PROFILE_HZ once and, when asked to, set up the shared memory
 * and start ospreyd. Idempotent; the shared library calls it from a constructor. A runtime linking
 * the static archive calls it first thing in main (its constructor also calls it). */
OSP_PROF_API void osp_prof_boot(void);

/* Nonzero when this process is being profiled. */
OSP_PROF_API int osp_prof_active(void);

/* Register the calling thread for sampling under a fiber id and a label ("main", "fiber",
 * "effect", ...; truncated to 64 bytes). Registering an already registered thread ends its
 * current registration and starts a new one under the new fiber id and label, so a runtime
 * that labels its own threads wins over the automatic registration of the preload library.
 * The thread is unregistered automatically when it ends (return, pthread_exit, cancel).
 * No-op when inactive. */
OSP_PROF_API void osp_prof_thread_register(int64_t fiber_id, const char *label);

/* Stop sampling the calling thread. When it returns no sample of the thread is taken any
 * more. No-op when inactive or not registered. */
OSP_PROF_API void osp_prof_thread_unregister(void);

/* For a runtime that switches stacks itself (coroutines, fibers, green threads): call this on the
 * thread right before it switches to the fiber `fiber_id` (label "coroutine", "task", ...), whose
 * stack is [stack, stack + stack_size); and with stack NULL right before it switches back to the
 * thread's own stack. Samples taken while the thread runs on that stack are then walked inside
 * those bounds, in place, to the fiber's entry function. The runtime vouches that the range stays
 * mapped while the fiber runs on it. Without the call a fiber's stack is still walked (from a copy
 * of it taken in the handler, up to 256 KiB from the stack pointer's page), at a system call per
 * sample (more for one deeper than 16 KiB). Samples taken while a fiber with a nonzero id runs are
 * that fiber's: the profile has a fiber per id and thread it ran on, under `label` (up to 64
 * bytes, read when a sample is first taken on the fiber: keep it valid while the fiber runs; a
 * string that is gone reads as no label, never a fault). Id 0 or a NULL stack: the samples are the
 * thread's own again. An id names one fiber (the last label given is its). Costs a few stores: no
 * system call, no lock. Async-signal-safe. No-op when inactive or the thread is not registered. */
OSP_PROF_API void osp_prof_fiber_switch(int64_t fiber_id, const char *label, const void *stack,
                                        size_t stack_size);

#ifdef __cplusplus
}
#endif

#endif /* OSPREY_PROF_H */
