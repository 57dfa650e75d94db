/* ospd_target.h — watching a target process through /proc and its pidfd, and ospreyd's
 * scheduling beside it (target.c). */
#ifndef OSPD_TARGET_H
#define OSPD_TARGET_H

#include <stdbool.h>
#include <stdint.h>

/* Every `proc_pid` below is the number /proc gives the process (ospd_proc_pid, proc-view.c:
 * the process's own pid unless this /proc is another pid namespace's); the others are pids of
 * the collector's namespace. */

/* Read /proc/<pid>/stat. Returns the state letter ('R', 'S', 'Z', ...) or 0 when the process
 * is gone; *exit_code receives field 52 (waitpid encoding) or -1. */
char ospd_target_state(int32_t proc_pid, int *exit_code);
/* The process's parent (field 4 of /proc/<pid>/stat: a number of /proc's, too), or 0 when it
 * is gone. */
int32_t ospd_target_parent(int32_t proc_pid);
/* The wait status the pidfd knows, or -1 (a kernel before 6.15, or not known yet). */
int ospd_target_pidfd_status(int pidfd);
/* Whether a thread of the process other than a zombie main thread is still alive (a main
 * thread that called pthread_exit stays a zombie while the others run). */
bool ospd_target_threads_alive(int32_t proc_pid);
/* Whether the process maps the ring named `ring` (its memfd, "/osprey-..." less the slash, is
 * in /proc/<pid>/maps): 1, 0, or -1 when its maps cannot be read or are empty (the process is
 * gone, or a zombie on its way out). */
int ospd_target_maps_ring(int32_t proc_pid, const char *ring);

/* The nice value the target's main thread runs at, or ospreyd's own when it cannot be read. */
int ospd_target_nice(int32_t pid);
/* The calling thread's scheduling (SCHED_OTHER): `nice`, and a slice request of `slice_ns`
 * (Linux >= 6.12, EEVDF; 0: the default). Returns 0, or -1 when refused (a nice value below
 * the one it has needs CAP_SYS_NICE or RLIMIT_NICE). */
int ospd_sched_self(int nice, uint64_t slice_ns);

/* The target's command name, as perf names a process: /proc/PID/comm (the name it was exec'd
 * by, a link's: redis-server where /proc/PID/exe is redis-check-rdb). A new string, or NULL
 * when it cannot be read (the raw file then says none). */
char *ospd_target_comm(int32_t proc_pid);

#endif /* OSPD_TARGET_H */
