/* osp_handler.h — layer 4 of the shim (see osp_base.h for the list): the SIGPROF handler
 * (handler.c), alone in its file because it is the whole signal-safety audit surface: it calls
 * only what layers 1-3 mark "Async-signal-safe." and, of the C library, only functions on
 * POSIX's async-signal-safe list (clock_gettime, memcpy, memcmp); it takes no lock.
 */
#ifndef OSP_HANDLER_H
#define OSP_HANDLER_H

#include <signal.h>

#include "osp_core.h"

/* What the interrupted context shows: a thread blocked inside a system call (the kernel
 * rewound pc to restart it, or it returns EINTR), one on its way out of a system call, or one
 * running anywhere else. Reads the code bytes around pc with process_vm_readv (one read in
 * the common case). Async-signal-safe. */
enum osp__instant { OSP__INSTANT_RUNNING, OSP__INSTANT_BLOCKED, OSP__INSTANT_SYSCALL_RETURN };
enum osp__instant osp__context_instant(const void *ucontext);
/* The SIGPROF handler (installed by boot). */
void osp__sigprof_handler(int sig, siginfo_t *info, void *context);

#endif /* OSP_HANDLER_H */
