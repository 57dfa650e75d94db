/* osp_boot.h — layer 5 of the shim (see osp_base.h for the list): the profiled run itself.
 *
 *   seccomp.c      a seccomp filter the process boots under: the calls it kills tried first
 *                  in a throwaway child, profiling off or a feature without them
 *   descendants.c  the bookkeeping a descendant's new image needs, kept out of the program's
 *                  environment and added only to what it hands to exec and spawn
 *   control.c      pausing our signals around execve and for good once the program uses
 *                  SIGPROF itself
 *   mask.c         the program's view of SIGPROF in its threads' masks: SIGPROF kept
 *                  deliverable where the program blocks it, the program shown what it set
 *   switches.c     the kernel's context-switch events, opened for ospreyd
 *   timeouts.c     the descriptors with a socket timeout
 *   env.c          OSPREY_* read once, the profile's path, the run's root, session and lock
 *   shm.c          the ring, the unwind tables, the image table; the descriptors meant for
 *                  the collector until handed over
 *   spawn.c        ospreyd located and started; the forks' socket and a forked child's
 *                  greeting to its parent's collector
 *   exit.c         the exit handler and its bounded wait for ospreyd; the CPU time paid
 *                  before _exit
 *   start.c        osp__profile_start, the one start of a profile (a process's or a forked
 *                  child's); thread registration (osprey_prof.h)
 *   fork.c         forked children and raw clones: the parent's let go of, a profile started
 *   boot.c         the constructor, osp_prof_boot/osp_prof_active, the checks before a start
 *
 * The guard's two halves are inline, below.
 *
 * Within the layer, calls go from later files in this list to earlier ones only. Uses layers
 * 1-4; used only by the interposers (preload.c, guard.c, signals.c), which have no header:
 * nothing in the shim calls them.
 */
#ifndef OSP_BOOT_H
#define OSP_BOOT_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "osp_core.h"
#include "osp_ring.h"

/* ---- descendants.c ----------------------------------------------------------------------- */

/* The bookkeeping a new image of a descendant needs ("OSPREY_PROFILE_ROOT_PID=...",
 * "OSPREY_PROFILE_LAST_PID=..."), kept out of the program's environment (set once at boot). */
/* switches.c: the kernel's context-switch events for ospreyd, one per CPU, opened on the
 * booting thread with inherit (proto/osp_ring.h, "Waits from the kernel"). Returns how many
 * went into fds (at most max), 0 when the kernel refuses them, with *refused the errno it
 * gave (EACCES: perf_event_paranoid, or a seccomp filter; ENOSYS, ENOENT: no perf events;
 * ENOMEM: no ring could be mapped). Not async-signal-safe. */
int osp__switches_open(int *fds, int max, uint32_t pages, int *refused);
/* A forked child's rings: a quarter of an image's. Their pages are allocated and cleared as
 * the child forks (0.3 ms for two CPUs' full rings here, most of what a fork cost); a worker
 * is read at every drain, well before 16 pages fill. */
#define OSP__SWITCH_FORK_PAGES (OSP_SWITCH_RING_PAGES / 4)
void osp__switches_close(int *fds, int n);

void osp__bookkeeping_set(long root_pid, long last_pid);
/* The collector a new image started from here greets (OSPREY_PROFILE_GREET): the one listening
 * on the forks socket of ring `ring`; NULL or "": none, the new image starts its own. */
void osp__greet_set(const char *ring);
/* The ring whose collector osp__greet_set named (the forks socket a new image greets), or NULL.
 * Async-signal-safe. */
const char *osp__greet_ring(void);
/* Processes that escape the profile (OSP_REC_ESCAPED): whether this image was preloaded (set
 * at boot), why a new image with environment `envp` would run unprofiled (enum osp_escape, 0
 * when it would not), and the record that says so, for `pid` running `path` (NULL: unknown;
 * pid 0: this process).
 * Only in the booted process, never in a vfork child. */
void osp__escape_set_preloaded(int preloaded);
int osp__env_escapes(char *const envp[]);
void osp__note_escape(long pid, const char *path, char *const envp[]);
size_t osp__env_count(char *const envp[]);
/* envp with the bookkeeping entries, built in `store` (n + 4 entries, on the caller's stack:
 * no malloc in a forked child), when the new image will be profiled; else envp itself. */
char *const *osp__env_with_bookkeeping(char *const envp[], size_t n, char **store);
/* Declare `name`: envp plus the bookkeeping, on this stack frame. */
#define OSP__ENV(name, envp)                                                                       \
    size_t name##_n = osp__env_count(envp);                                                        \
    char *name##_store[name##_n + 5];                                                              \
    char *const *name = osp__env_with_bookkeeping(envp, name##_n, name##_store)
/* system() and popen() start their child through the C library's own posix_spawn, with the
 * environment as it is: put the bookkeeping there for the call only. Returns 1 when it did
 * (then withdraw it after the call with that value). */
int osp__bookkeeping_export(void);
void osp__bookkeeping_withdraw(int exported);

/* fork.c: in the child of a clone or clone3 the program called directly (syscall(2): no fork
 * handler runs), a new process: profiled as a forked child is, when the program had one
 * thread at the call (another's lock, malloc's included, may be held for good in the copy);
 * else one line says it is not. Nothing in a process boot already knows. */
void osp__cloned_child(int single_threaded);
/* exit.c: before _exit (no exit handler runs): the calling thread's CPU time since its last
 * sample, paid as exit's handler pays it; SIGPROF stays blocked (the process is ending). */
void osp__pay_before_exit(void);
/* exit.c: the threads of this process (/proc/self/stat), or 0 when it cannot be read. */
int osp__threads_in_process(void);

/* ---- control.c --------------------------------------------------------------------------- */

/* Before execve: pause our signals (no handler arms a timer again) and disarm every thread's
 * timers, wait for two of ospreyd's rounds, and take our SIGPROFs still pending on the calling
 * thread (they would outlive execve and kill the new program). */
void osp__exec_begin(void);
/* execve failed: every thread's sampling timer again. */
void osp__exec_failed(void);
/* descendants.c: a forked child that execs having recorded nothing leaves no file of its own, so
 * its new image takes the plain name (<path>.<pid>.json); begin 0 puts it back (the exec failed).
 * With our signals paused. */
void osp__exec_naming(int begin);
/* Take the SIGPROFs of ours pending on the calling thread (the program's own are sent again). */
void osp__take_pending_sigprof(void);
/* The program is about to send SIGPROF itself: pause our signals for good (every thread's
 * timers disarmed, none armed again). */
void osp__sigprof_back_off(void);
/* Where /proc/self/status says the process runs under a seccomp filter, the shim's calls
 * made first in a throwaway child: 0 to go on (osp__forbidden says which features go without
 * their call), -1 when profiling is off (said in one line). One read of /proc/self/status
 * without a filter. */
int osp__seccomp_check(void);
/* "OSPREY_PROFILE_SECCOMP=<filters>:<forbidden>", the answer a new image of this one takes
 * rather than trying again under the same filters (descendants.c), or NULL (no filter). */
const char *osp__seccomp_entry(void);

/* The program is about to enter a seccomp sandbox (prctl(PR_SET_SECCOMP), seccomp(2)):
 * profiling stops for good first, with one line. */
void osp__sandbox_begin(void);
/* The program is about to send or arm SIGPROF (or to wait for it): stop ours first, and say
 * so in one line. */
void osp__program_will_signal(int sig);
/* The program arms a timer of its own that sends SIGPROF (setitimer(ITIMER_PROF)): ours go
 * on beside it (shim/README.md, "A program that profiles itself"); the program's masks become
 * the kernel's from now on. */
void osp__program_arms_sigprof(void);
/* The same for a POSIX timer (timer_create) whose signal is SIGPROF: on a CPU-time clock the
 * guard goes on, on another the guard stands aside (it may end a wait). */
void osp__program_arms_sigprof_timer(clockid_t clock, const struct sigevent *sev);
/* Wait (at most ~50 ms) until ospreyd has finished two rounds of signals since the call: no
 * round that began before the caller's change of state can still be sending. Returns at once
 * when ospreyd is not attached. */
/* wake: signals_paused was raised; ospreyd is woken (SIGURG) and counts the rounds at once. */
void osp__wait_for_round(int wake);

/* ---- mask.c ------------------------------------------------------------------------------ */

/* A registered thread whose kernel mask blocks SIGPROF (at boot, or set by a runtime before
 * it registers), or whose creator's program view blocked it (inherited_blocked), keeps it
 * unblocked for real while the program sees it blocked. Called by the thread. */
void osp__sigmask_adopt(int inherited_blocked);
/* Does the program's view of the calling thread's mask block SIGPROF? */
int osp__sigmask_shows_blocked(void);
/* Do we keep SIGPROF deliverable under the program's mask on this thread (mask.c)? Then a
 * block of SIGPROF is the program's view only, never the kernel's, and nothing needs
 * tracking. */
int osp__sigmask_virtualizing(void);
/* Around the program's pthread_sigmask/sigprocmask: before, the set the kernel is to get
 * (SIGPROF left out where the program blocks it; copy is room for it), and in *shown the
 * program's view of SIGPROF before the call (-1: the kernel's answer is already the program's
 * view); after a call that succeeded, the old mask the program gets back. */
const sigset_t *osp__sigmask_view_before(int how, const sigset_t *set, sigset_t *copy, int *shown);
/* `passed` is what view_before returned, `old` the kernel's old mask (never NULL: the wrapper
 * asks for it even where the program did not), changed into the program's view. */
void osp__sigmask_view_after(int how, const sigset_t *passed, sigset_t *old, int shown);
/* Around an exec or a spawn: the kernel mask the child inherits is the program's view.
 * begin returns whether it blocked SIGPROF; end takes that back (not in a vfork child). */
int osp__sigmask_child_begin(void);
void osp__sigmask_child_end(int blocked);
/* The set a sigwait-like call may wait for: SIGPROF left out of a larger set while its kernel
 * mask keeps SIGPROF unblocked (the call would take our signals for the program's); a set of
 * SIGPROF alone means the program uses it (ours stop). Returns set or copy. */
const sigset_t *osp__sigwait_set(const sigset_t *set, sigset_t *copy);

/* ---- timeouts.c -------------------------------------------------------------------------- */

/* The descriptors with a socket timeout (SO_RCVTIMEO or SO_SNDTIMEO): a signal handler makes
 * a blocking call on one return EINTR, read and write included. One bit per descriptor below
 * OSP__TIMED_FDS (128 KiB of zero pages, touched where a bit is set). */
#define OSP__TIMED_FDS (1 << 20)
extern _Atomic uint64_t osp__timed_fds[OSP__TIMED_FDS / 64] __attribute__((visibility("hidden")));
/* The descriptors below this one have no timeout: the whole set while none has one, else 0
 * (timeouts.c keeps it from a count of the bits set). */
extern _Atomic uint32_t osp__timed_below __attribute__((visibility("hidden")));
/* Known at a glance to have no timeout (the wrappers of read and write test this first: one
 * compare, no lookup). A negative fd is not: the caller asks osp__fd_timed. */
static inline int osp__fd_surely_untimed(int fd)
{
    return (unsigned int)fd < atomic_load_explicit(&osp__timed_below, memory_order_relaxed);
}
/* Might a blocking call on fd be cut short by a handler? A descriptor beyond the set: yes. */
static inline int osp__fd_timed(int fd)
{
    if (fd < 0)
        return 0;
    if (fd >= OSP__TIMED_FDS)
        return 1;
    uint64_t word = atomic_load_explicit(&osp__timed_fds[fd / 64], memory_order_relaxed);
    return (int)((word >> (fd % 64)) & 1);
}
void osp__fd_timed_set(int fd, int timed);
/* Of those, the pipes the program made where the shim times waits (guard.c's pipe): their
 * reads and writes are timed by their clock reads, not guarded (a pipe's call resumes after
 * our handler). Kept with the set: osp__fd_timed_set clears a descriptor's bit, and
 * osp__fd_piped_set sets both. */
extern _Atomic uint64_t osp__piped_fds[OSP__TIMED_FDS / 64] __attribute__((visibility("hidden")));
static inline int osp__fd_piped(int fd)
{
    /* Unsigned: a negative fd is out of range too, and the word and bit take a shift and a
     * mask (a pipe's read or write asks this at every call). */
    unsigned int u = (unsigned int)fd;
    if (u >= OSP__TIMED_FDS)
        return 0;
    uint64_t word = atomic_load_explicit(&osp__piped_fds[u / 64], memory_order_relaxed);
    return (int)((word >> (u % 64)) & 1);
}
void osp__fd_piped_set(int fd);
/* to becomes a copy of fd (the dup family): its timeout, and whether it is a pipe of ours. */
void osp__fd_timed_copy(int fd, int to);
/* Ask the kernel whether fd has a timeout now (getsockopt), and remember. errno is kept. */
void osp__fd_timed_ask(int fd);
/* At boot: ask of every descriptor the process holds (inherited across exec). */
void osp__fds_timed_scan(void);
/* Forget first..last (close_range). */
void osp__fds_timed_forget(unsigned int first, unsigned int last);

/* ---- env.c ------------------------------------------------------------------------------- */

/* The environment, read once at boot before anything is set (a program may bring its own
 * getenv/setenv — bash does — so nothing is read after the first setenv). */
struct osp__boot_env {
    char profile[PATH_MAX];
    char hz[32];
    char seconds[32]; /* OSPREY_PROFILE_SECONDS: profile this long, then let the program run */
    char until[32];   /* OSPREY_PROFILE_UNTIL_NS: the same as a CLOCK_MONOTONIC instant */
    char daemon[PATH_MAX];
    char export_formats[256]; /* OSPREY_EXPORT: outputs ospreyd writes beside the raw file */
    long root_pid;            /* OSPREY_PROFILE_ROOT_PID, 0 when unset */
    long last_pid; /* OSPREY_PROFILE_LAST_PID: the latest process image that booted here */
    int has_profile, has_hz, has_daemon, has_export, has_seconds, has_until;
    char ring[OSP_RING_NAME_SIZE]; /* OSPREY_RING: a collector started apart attaches by name */
    int has_ring;
    int forks_off; /* OSPREY_PROFILE_FORKS=0: forked children are not profiled */
};
/* What boot read and decided, kept for a forked child, which boots from the same: the
 * environment (read once), the rate, the user's profile path made absolute, the run's root
 * (this pid in the run's first process), the session this image booted in (a forked child in
 * another, a daemon's double fork, whose parent's collector cannot be reached starts none of
 * its own), and the raw profile's path. Written by boot (and a forked child's path by fork.c),
 * read after. */
extern struct osp__boot_env osp__boot_env;
extern uint32_t osp__boot_rate;
extern char osp__profile_absolute[PATH_MAX];
extern long osp__run_root_pid;
extern pid_t osp__boot_session;
/* Did this process leave the session it booted in (setsid: a daemon)? Not when getsid says 0:
 * its session's leader is outside its pid namespace (unshare --pid --fork, bwrap), which a
 * child of a process that made one is in without having called setsid. */
int osp__left_session(void);
extern char osp__out_path[PATH_MAX];
/* The run's lock, a descriptor held shared (-1: none) until handed over (osp__handover_close);
 * osp__run_locked: this image handed it to its collector, so its exit need not wait. */
extern int osp__run_lock_fd;
extern int osp__run_locked;
uint64_t osp__unix_ns(void);
/* 64 random bits (getrandom; before the kernel has entropy, what differs between processes). */
uint64_t osp__random64(void);
/* OSPREY_* into env, and whether LD_PRELOAD holds the shim. Once, before any setenv. */
void osp__read_env(struct osp__boot_env *env);
/* The raw profile's path into osp__out_path (and the user's, absolute, into
 * osp__profile_absolute); sets the run's root and session and the bookkeeping for new images.
 * 0 or negative errno. */
int osp__resolve_out_path(const struct osp__boot_env *env, uint64_t random_bits);
/* The run's lock beside osp__out_path into osp__run_lock_fd, shared, never blocking; what is
 * not our lock is skipped (said once a run). */
void osp__run_lock_take(void);
/* The profile's end (CLOCK_MONOTONIC) from OSPREY_PROFILE_UNTIL_NS or _SECONDS, for a ring
 * that started at start_mono_ns; 0: none (a bad value said in one line). */
uint64_t osp__stop_at_from_env(uint64_t start_mono_ns);

/* ---- shm.c ------------------------------------------------------------------------------- */

/* The image's ring (its header, the event ring's writer on it, its size, its name in the
 * maps), its unwind tables' mapping, and the image table with its lock: set by
 * osp__ring_create and osp__unwind_create, let go of in a forked child (fork.c). The image
 * lock guards osp__image_table: its scan and emit run on whichever program thread registers,
 * unloads an object or exits. Taken before the registry lock, never while holding it. */
extern struct osp_ring_header *osp__ring_header;
extern size_t osp__ring_bytes;
extern struct osp__event_ring osp__events;
extern char osp__shm_name[OSP_RING_NAME_SIZE];
extern void *osp__unwind_map;
extern struct osp__images osp__image_table;
extern pthread_mutex_t osp__images_lock;
/* The registry is initialised and usable (stays so after exit; cleared in a forked child,
 * whose copy of the registry lock may be held by a thread that does not exist there). */
extern _Atomic int osp__registry_ready;
/* Descriptors for the collector, -1 (or a count of 0) once handed over: the ring's memfd,
 * the forks' socket, the tables' memfd, the kernel's context-switch events. */
extern int osp__ring_fd;
extern int osp__forks_fd;
extern int osp__unwind_fd;
extern int osp__switch_fds[OSP_MAX_SWITCH_FDS];
extern int osp__switch_count;
/* A ring for this image at rate_hz, named with random_bits; reserve: every page allocated now
 * (-ECANCELED, said in one line, when memory is short). 0 or negative errno. */
int osp__ring_create(uint32_t rate_hz, uint64_t random_bits, int reserve);
/* The unwind tables (without them, one line says stacks follow frame pointers only). */
void osp__unwind_create(void);
/* Our copies of the collector's descriptors closed (it has its own, or never will). */
void osp__handover_close(void);
/* The ring and tables unmapped, every descriptor closed: a start that failed. */
void osp__ring_destroy(void);
/* With OSPREY_RING: the ring and the tables under their names at last (renamed from the ring's
 * temporary name), or -EEXIST when the name is taken; osp__ring_unlink removes the names
 * (once; again it does nothing) and says whether a collector had taken the ring's already. */
int osp__ring_publish(void);
int osp__ring_unlink(void);

/* ---- spawn.c ----------------------------------------------------------------------------- */

/* A collector of this image's was started or greeted (it will write the profile); the
 * process that became ospreyd (0: none, or a parent's collector). */
extern int osp__daemon_spawned;
extern long osp__daemon_spawned_pid;
/* Start ospreyd for this image, detached, with its descriptors; does not wait for it. 0 or
 * negative errno (said in one line). */
int osp__spawn_daemon(const struct osp__boot_env *env);
/* Listen for this image's forked children (osp__forks_fd), before its collector starts. */
void osp__forks_listen(void);
/* A forked child's connection to the collector of the parent whose ring is parent_ring:
 * a descriptor; -EPERM when the listener is another user's; else negative errno. */
long osp__greeting_connect(const char *parent_ring);
/* Hand this process's ring and events to the collector on sock (closed here), and wait
 * (bounded) for its answer: 0 once confirmed (it follows this process); sock itself when
 * negative; else negative errno (it does not: no answer in time, or refused). */
int osp__greet_parent(long sock);
/* A forked child's greeting: sent on sock, its answer left for later (osp__forked_settle; the
 * handler confirms it once it has come, osp__greeting_poll). 0 once sent (sock kept open);
 * else negative errno (sock closed: the child starts its own collector). */
int osp__greet_deferred(long sock);
/* A forked child's deferred greeting settled, at its exec or exit: `wait` >= 0: the answer
 * waited for (bounded), and without one the child's own collector started as boot starts
 * one; < 0: given up (an exec with nothing recorded: the next image greets). Then the
 * descriptors handed over. 1 when nothing was deferred; 0 when followed; else negative. */
int osp__forked_settle(int wait);

/* ---- exit.c ------------------------------------------------------------------------------ */

/* atexit: stop sampling, flush, publish the EXIT record, wait for ospreyd (bounded). */
void osp__at_exit(void);

/* ---- start.c ----------------------------------------------------------------------------- */

/* How a profile starts: at a process's boot (boot.c) or in a forked child (fork.c, which sets
 * parent). */
struct osp__start {
    uint32_t rate;
    uint64_t random_bits;
    int reserve;           /* the run's first image: every page of its ring allocated now */
    pid_t parent;          /* a forked child's parent; 0 at a process's boot */
    uint64_t stop_at_ns;   /* a forked child's end: its parent's */
    long greeting;         /* osp__greeting_connect's (a forked child's, or a later image's
                            * with OSPREY_PROFILE_GREET), or negative */
    void (*at_fork)(void); /* a process's fork handler (pthread_atfork), installed at start */
    int64_t fiber;         /* a forked child's thread, registered last */
    const char *label;
    const char *parent_ring; /* a forked child's parent's ring (the collector it greets) */
    int defer_answer;        /* a forked child's: its greeting's answer not waited for at the
                              * fork (its parent's collector had attached: osp__greet_deferred) */
};
/* The one start of a profile: the ring, the unwind tables, the switch events, the registry,
 * the image list (a forked child's is its parent's, sent again: the caller holds
 * osp__images_lock, released here), the run published, the collector started (or a forked
 * child's parent's greeted), the descriptors handed over. 0 once profiling; else negative
 * errno, what was made undone and, where it is the program's business, one line said. */
int osp__profile_start(const struct osp__start *start);
/* Record objects loaded since the last look (dl_iterate_phdr; never with the registry lock
 * held). Runs on the program's own threads at moments they are in our code anyway: thread
 * registration and dlclose. */
void osp__images_refresh(void);

/* ---- fork.c ------------------------------------------------------------------------------ */

/* pthread_atfork child handler: the parent's profile let go of, the child's own started. */
void osp__at_fork_child(void);
/* Before an exec (the exec interposers, after osp__exec_begin) or a seccomp sandbox (whose
 * filter may forbid the calls of a later settle): a forked child's greeting not answered yet
 * is settled, waited for when the child recorded something (its profile is kept), else given
 * up (an exec's next image greets the same collector: one exchange). */
void osp__forked_exec(void);

/* The guard (guard.c's wrappers, and boot's own naps on the program's thread): block SIGPROF on
 * this thread around a call a signal would cut short, if the guard applies (a registered thread,
 * profiling active, no SIGPROF of the program's that could end the call: guard_stands_aside,
 * SIGPROF not already blocked); *old
 * receives the previous mask; fn is the C library's function the call goes to (the wait's leaf
 * frame). Returns 1 when the caller must end the guard. Inline, so that in an
 * optimised build the wrapper is the only frame of ours between the wait and its caller (slot.c
 * leaves two frames out of a guarded wait's stack: osp__guard_wait_begin's and the wrapper's). */
static inline int osp__guard_begin(sigset_t *old, const void *fn)
{
    if (osp__tls_slot == NULL || !osp__is_active() || osp__sigprof_guard_stands_aside())
        return 0;
    /* A forked child about to wait with its greeting unanswered (README.md, "The collector's
     * answer"): the answer waited for first, so that the collector follows what it waits. That
     * wait is the call's (guard_wait_begin writes it at the call's site): SIGPROF is blocked
     * over it, or a capture in it would name our own poll (the caller's stack, without the
     * call: 10 ms of a forked sleeper's 0.31 s beside two CPU hogs). */
    int settle = osp__greeting_pending() &&
                 !atomic_load_explicit(&osp__sandboxed, memory_order_relaxed) &&
                 getpid() == osp__booted_pid;
    uint64_t called_ns = settle ? osp__mono_ns() : 0;
    /* A guarded call this thread left by longjmp: its block of SIGPROF is undone first. */
    osp__guard_repair_if_left(osp__tls_slot, (uint64_t)(uintptr_t)__builtin_frame_address(0));
    int masked = osp__sigprof_mask_raw(SIG_BLOCK, old) == 0; /* raw: not a mask the program set */
    if (settle)
        osp__forked_settle(1);
    if (!masked)
        return 0;
    if (sigismember(old, SIGPROF)) {
        osp__sigmask_raw(SIG_SETMASK, old, NULL);
        return 0;
    }
    osp__guard_wait_begin(osp__tls_slot, fn, called_ns);
    return 1;
}

/* End the guard osp__guard_begin began: write the wait, restore the mask (a signal of ours
 * held back lands now). errno is kept. */
static inline void osp__guard_end(int guarded, const sigset_t *old)
{
    if (!guarded)
        return;
    int saved = errno;
    struct osp__slot *s = osp__tls_slot;
    if (s != NULL)
        osp__guard_wait_end(s);
    osp__sigmask_raw(SIG_SETMASK, old, NULL);
    if (s != NULL)
        s->guard_leaving = 0;
    errno = saved;
}

/* Does a sleep of this length block (NULL: forever)? */
static inline int osp__timespec_blocks(const struct timespec *t)
{
    return t == NULL || t->tv_sec != 0 || t->tv_nsec != 0;
}

#endif /* OSP_BOOT_H */
