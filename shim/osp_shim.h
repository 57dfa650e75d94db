/* osp_shim.h — internal interfaces between the Linux units of the shim. Nothing here is
 * exported from the shared library (it is built with hidden visibility); the unit tests link
 * the units directly and use these to plant frame chains, fill rings and drive a registry.
 *
 *   unwind.c        pure frame-pointer walk and the blocked-thread stack scan
 *   event_ring.c    writer side of the shared event ring and of each slot's sample ring
 *   registry.c      thread slots, generations, THREAD_START/THREAD_END records
 *   images.c        loaded objects (dl_iterate_phdr) -> IMAGE records
 *   handler.c       the SIGPROF handler and its CPU-time credit rule
 *   control.c       pausing ospreyd's signals around execve and the program's own SIGPROF
 *   boot.c          activation, shared memory, ospreyd, exit and fork handling
 *   preload.c       constructor, pthread_create/setname and exec interposition
 *   signals.c       our SIGPROF vs the program's (tagging, shadow disposition)
 *   guard.c         blocking calls that a signal would cut short, guarded
 */
#ifndef OSP_SHIM_H
#define OSP_SHIM_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "osp_ring.h"

/* ---- system calls ------------------------------------------------------------------------ */

/* A system call made directly, never through the C library's syscall(), which the shim
 * interposes (guard.c): inside the handler that would be a symbol lookup in a signal handler,
 * and every call a detour. Returns the result, or -1 with errno set. Async-signal-safe. */
static inline long osp__sys(long nr, long a, long b, long c, long d, long e)
{
    long ret;
#if defined(__x86_64__)
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
    ret = x0;
#else
#error "osp__sys: x86_64 and aarch64 only"
#endif
    if (ret < 0 && ret > -4096) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

/* A clock's reading in ns (0 when it cannot be read). Async-signal-safe: clock_gettime is on
 * POSIX's list (XSH 2.4.3). */
static inline uint64_t osp__clock_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- unwind.c ---------------------------------------------------------------------------- */

/* Largest distance between two consecutive frame records the walk accepts. */
#define OSP__MAX_FRAME_BYTES (1u << 20)

/* Walk a frame-pointer chain: out[0] = pc, then one return address per frame record, until a
 * check fails or `cap` addresses are stored. Each frame pointer must be 8-byte aligned, inside
 * [lo, hi) with its 16-byte record, strictly above the previous one and at most
 * OSP__MAX_FRAME_BYTES above it; a zero return address ends the walk. Returns the depth (>= 1
 * when cap >= 1). A pure function of its arguments and the memory it reads in [lo, hi).
 * Async-signal-safe. */
uint32_t osp__unwind_walk(uint64_t pc, uint64_t fp, uint64_t lo, uint64_t hi, uint64_t *out,
                          uint32_t cap);

/* The aarch64 form: pc, then the link register (when nonzero), then the chain from fp; the
 * first chained return address is dropped when it equals lr (a function that saved lr in its
 * frame record would otherwise appear twice). Addresses are expected PAC-stripped.
 * Async-signal-safe. */
uint32_t osp__unwind_walk_lr(uint64_t pc, uint64_t lr, uint64_t fp, uint64_t lo, uint64_t hi,
                             uint64_t *out, uint32_t cap);

/* x86_64: when pc sits where the interrupted function's frame record is not in rbp — at the
 * `push %rbp` of a frame-pointer prologue (`push %rbp; mov %rsp,%rbp`, optionally after
 * endbr64), at the `mov %rsp,%rbp` that follows it, or at a `ret` — return the function's
 * return address ([sp], or [sp + 8] after the push), which the walk from rbp would skip (rbp
 * still holds the caller's frame, so the caller itself is lost). 0 otherwise, or when the
 * slot is not inside [sp, hi). Code bytes around pc, within pc's own page, are read with
 * process_vm_readv (no fault on an execute-only page). Async-signal-safe. */
uint64_t osp__unwind_x86_frameless_return(uint64_t pc, uint64_t sp, uint64_t hi);

/* Read n code bytes at addr without faulting (process_vm_readv). Returns 0 or -1.
 * Async-signal-safe. */
int osp__read_code(uint64_t addr, void *out, size_t n);
/* Remember the process's id for osp__read_code (at boot, and in a forked child): one system
 * call less per sample; and whether code the CPU runs is readable as plain memory. */
void osp__read_code_init(void);
/* Read n code bytes at addr, for an interrupted pc: bytes on pc's own page are read directly
 * where executable means readable (x86_64 without protection keys in use): the thread was
 * running there, so the page is mapped. Anything else, or elsewhere: osp__read_code (a
 * process_vm_readv costs 3-25 us on a virtual machine; most samples need two).
 * Async-signal-safe. */
int osp__read_pc_code(uint64_t pc, uint64_t addr, void *out, size_t n);

/* Strip pointer-authentication bits from a code address (identity off aarch64).
 * Async-signal-safe. */
uint64_t osp__strip_pac(uint64_t addr);

/* ---- event_ring.c ------------------------------------------------------------------------ */

/* The producer's view of the shared event ring. One producer at a time: every writer holds
 * the registry lock (see registry.c), so the mutex orders successive producers and the
 * producer's own head may be read relaxed. */
struct osp__event_ring {
    struct osp_ring_header *header; /* for the drop counters */
    _Atomic uint64_t *head, *tail;  /* the header's, or a slot's */
    uint8_t *data;
    uint64_t size; /* data bytes, cached (the daemon never writes it) */
};

/* Fill a fresh header (identity, sizes, pid, rate, clocks, platform, RUNNING) for a data area
 * of data_size bytes (a power of two) right after it. */
void osp__event_ring_init_header(struct osp_ring_header *h, uint64_t data_size, uint32_t rate_hz,
                                 uint64_t start_unix_ns, uint64_t start_mono_ns);
void osp__event_ring_attach(struct osp__event_ring *w, struct osp_ring_header *h);
/* The writer of one slot's sample ring (proto/osp_ring.h, "Slots"). */
void osp__slot_ring_attach(struct osp__event_ring *w, struct osp_ring_header *h,
                           struct osp_slot *slot);
/* Reserve `size` bytes (a multiple of 8) for one record, writing a PAD record first when the
 * record would cross the end of the data area. Returns where to write it, or NULL when the
 * unread bytes leave no room (nothing is overwritten). Follow with osp__event_ring_commit. */
void *osp__event_ring_reserve(struct osp__event_ring *w, uint32_t size, uint64_t *new_head);
/* Bytes samples leave free for control records (or a quarter of a smaller ring). */
#define OSP__CONTROL_HEADROOM (64u << 10)
/* Reserve for a SAMPLE or REPEAT record: like osp__event_ring_reserve, but fails while less
 * than the control headroom would remain free. */
void *osp__event_ring_reserve_sample(struct osp__event_ring *w, uint32_t size, uint64_t *new_head);
/* Publish everything up to new_head (pad included): (B). */
void osp__event_ring_commit(struct osp__event_ring *w, uint64_t new_head);
/* Write one whole record (the record header is filled in here). Returns 0 or -ENOSPC. */
int osp__event_ring_write(struct osp__event_ring *w, uint32_t type, const void *body,
                          uint32_t body_len, const void *tail, uint32_t tail_len);
/* Count lost samples in header->dropped. */
void osp__event_ring_count_drops(struct osp__event_ring *w, uint64_t n);

/* ---- registry.c -------------------------------------------------------------------------- */

/* One ON_CPU sample per sampling period of the thread's CPU time, as perf's cpu-clock counts:
 * a credit of CPU time not yet paid for by samples. */
struct osp__credit {
    uint64_t paid_ns; /* CPU time covered by ON_CPU samples so far (the thread's CPU clock) */
};

struct osp__slot {
    /* Fixed at slot creation. */
    uint32_t index;
    struct osp_slot *shared;     /* the control block ospreyd reads; NULL without a ring */
    struct osp__event_ring ring; /* this slot's sample ring (producer: the thread itself) */
    /* Valid while active; written under the registry lock before the slot is published. */
    int active;
    int automatic; /* registered by the preload path under the thread's name or "thread" */
    uint32_t generation;
    int64_t fiber;
    int32_t tid;
    uint32_t label_len;
    char label[OSP_MAX_LABEL + 1];
    pthread_t thread;
    uint64_t stack_lo, stack_hi;
    int timer;                    /* kernel id of the thread's CPU-time timer, -1 when none */
    uint64_t timer_expiry_cpu_ns; /* the thread CPU time it is armed for, 0 when not armed */
    int wall_timer;        /* kernel id of the thread's sampling timer (CLOCK_MONOTONIC), or -1 */
    uint64_t wall_due_ns;  /* the monotonic time it is armed for, 0 when not armed */
    uint64_t jitter_state; /* xorshift state of the sampling timer's jitter */
    /* The handler's own state: only the thread touches it (handler, or its code with SIGPROF
     * blocked), except at exit (see boot.c). */
    struct osp__credit credit;
    uint64_t last_run_ns, last_cpu_ns; /* when the handler last ran, and the CPU clock then */
    int wait_open;                     /* a wait has been captured and not yet written */
    int guard_leaving;               /* between a guarded call's return and SIGPROF's unblocking */
    uint64_t wait_t_ns, wait_cpu_ns; /* when it was captured, and the CPU clock then */
    uint32_t wait_depth;
    uint64_t wait_pcs[OSP_MAX_DEPTH];
};

struct osp__registry {
    pthread_mutex_t lock;
    struct osp__event_ring *ring;   /* NULL: bookkeeping only, no records */
    struct osp_ring_header *header; /* the shared slot table, or NULL */
    uint32_t rate_hz;
    uint32_t full_warned;
    int stopped; /* exit record published: no more records */
    struct osp__slot **slots;
    uint32_t count, capacity;
};

/* The calling thread's slot, read by the SIGPROF handler; initial-exec so that reading it
 * never allocates TLS inside the handler. */
extern __thread struct osp__slot *osp__tls_slot __attribute__((tls_model("initial-exec")));

int osp__registry_init(struct osp__registry *reg, struct osp__event_ring *ring, uint32_t capacity);
void osp__registry_destroy(struct osp__registry *reg);
/* Register the calling thread (re-registering it if it already is). Returns 0 or -errno. */
int osp__registry_register(struct osp__registry *reg, int64_t fiber, const char *label);
/* Mark the calling thread's registration automatic: a later pthread_setname_np renames it. */
void osp__registry_mark_automatic(struct osp__registry *reg);
/* An automatically registered thread was named: end its generation and start the next one
 * under the new label (a runtime's explicit label is never replaced). Returns 1 if renamed. */
int osp__registry_rename(struct osp__registry *reg, pthread_t thread, const char *label);
/* Unregister the calling thread; when it returns nothing touches the thread any more. */
void osp__registry_unregister(struct osp__registry *reg);
/* Write one SAMPLE_WEIGHTED record to `w` for slot s. Returns 0, or -ENOSPC when the ring is
 * full (the caller counts the drop, or carries the weight). Async-signal-safe. */
int osp__emit_sample(struct osp__event_ring *w, const struct osp__slot *s, uint64_t t_ns,
                     uint32_t state, uint32_t weight, const uint64_t *pcs, uint32_t depth);
/* Slots a shared table has room for; the table itself (NULL: bookkeeping only). */
void osp__registry_set_table(struct osp__registry *reg, struct osp_ring_header *header);
/* At exit: write every other thread's open wait to the event ring. Called with the registry
 * lock held. */
void osp__registry_flush_waits(struct osp__registry *reg, uint64_t now_ns);

/* ---- images.c ---------------------------------------------------------------------------- */

struct osp__image {
    uint64_t base, slide, text, text_size;
    uint32_t flags;
    int sent;
    int seen;          /* present in the latest scan */
    char *path;        /* absolute: what the IMAGE record carries */
    char *loader_name; /* the name as the loader reports it, which identifies the object in
                          later scans even after the program changes directory */
};

struct osp__images {
    struct osp__image *items;
    size_t count, capacity;
    unsigned long long adds, subs; /* dlpi_adds/dlpi_subs of the latest scan */
    char exe_path[OSP_MAX_PATH + 1];
};

int osp__images_init(struct osp__images *im);
void osp__images_destroy(struct osp__images *im);
/* Cheap check: have objects been loaded or unloaded since the latest scan? */
int osp__images_changed(struct osp__images *im);
/* Rescan the loaded objects (dl_iterate_phdr; never call with the registry lock held). */
int osp__images_scan(struct osp__images *im);
/* Called with the registry lock held: write IMAGE records for images not yet sent. */
void osp__images_emit(struct osp__images *im, struct osp__event_ring *w);

/* ---- handler.c --------------------------------------------------------------------------- */

/* Most CPU time one sample may stand for (in ns, and at least 16 periods); older CPU time
 * beyond it is dropped rather than charged to a stack that did not spend it. The CPU-time
 * timer catches a running thread within a few kernel ticks (4 ms each at 250 Hz), far inside
 * it, so this drops CPU time only after a stall. */
#define OSP__MAX_WEIGHT_NS 100000000u
#define OSP__MAX_WEIGHT    16u
/* The credit rule: with the thread's CPU clock at cpu_ns, how many periods are due now (0 when
 * less than half a period is unpaid; rounding, so a thread that lives two periods gets two
 * samples on average). Pays them. *needed_ns receives the CPU time until the next one is due.
 * A pure function. Async-signal-safe. */
uint32_t osp__credit_take(struct osp__credit *c, uint64_t cpu_ns, uint64_t period_ns,
                          uint64_t *needed_ns);
/* When a thread with this share of a CPU (parts per 1024, 1..1024) will have used needed_ns of
 * CPU time, from now_ns. A pure function. */
uint64_t osp__due_time(uint64_t now_ns, uint64_t needed_ns, uint32_t share_1024);
/* What the interrupted context shows: a thread blocked inside a system call (the kernel
 * rewound pc to restart it, or it returns EINTR), one on its way out of a system call, or one
 * running anywhere else. Reads the code bytes around pc with process_vm_readv (one read in
 * the common case). Async-signal-safe. */
enum osp__instant { OSP__INSTANT_RUNNING, OSP__INSTANT_BLOCKED, OSP__INSTANT_SYSCALL_RETURN };
enum osp__instant osp__context_instant(const void *ucontext);
/* Ask ospreyd to look at this slot again (proto/osp_ring.h, attention). Async-signal-safe. */
void osp__slot_wants_attention(const struct osp__slot *s);
/* The SIGPROF handler. */
void osp__sigprof_handler(int sig, siginfo_t *info, void *context);
/* The sampling period in ns, set once at boot. */
void osp__handler_set_rate(uint32_t rate_hz);
/* A registered thread's guard (guard.c): it blocks now in a call with SIGPROF blocked. */
void osp__guard_wait_begin(struct osp__slot *s);
/* ... and the call returned: write its wait when it lasted long enough. SIGPROF still blocked. */
void osp__guard_wait_end(struct osp__slot *s);
/* Write the thread's open wait, if any, ending at now_ns, to `w`. */
void osp__close_wait(struct osp__event_ring *w, struct osp__slot *s, uint64_t now_ns,
                     uint64_t cpu_ns);
/* Create / delete the calling thread's CPU-time timer (SIGPROF to itself, tagged as ours). */
int osp__thread_timer_create(clockid_t clock);
void osp__thread_timer_delete(int timer);
/* Start sampling the calling thread: its sampling timer, armed on its own CPU for one period
 * from now. Called by the thread once its slot is set up. */
void osp__sampling_start(struct osp__slot *s);
/* Disarm every registered thread's timer (timers are process-wide ids). */
void osp__cpu_timers_disarm_all(void);

/* ---- control.c --------------------------------------------------------------------------- */

/* Before execve: stop ospreyd's signals and every CPU-time timer, wait until no round of
 * signals can still be under way, and take our SIGPROFs still pending on the calling thread
 * (they would outlive execve and kill the new program). */
void osp__exec_begin(void);
/* execve failed: signal again. */
void osp__exec_failed(void);
/* Take the SIGPROFs of ours pending on the calling thread (the program's own are sent again). */
void osp__take_pending_sigprof(void);
/* The program is about to send SIGPROF itself: pause our signals for good and wait (bounded)
 * until none of ours is in flight. */
void osp__sigprof_back_off(void);
/* Wait (at most ~50 ms) until ospreyd has finished two rounds of signals since the call: no
 * round that began before the caller's change of state can still be sending. Returns at once
 * when ospreyd is not attached. */
void osp__wait_for_round(void);
/* The shared header (set at boot, NULL when inactive). */
extern struct osp_ring_header *osp__header;

/* ---- signals.c --------------------------------------------------------------------------- */

/* Install the handler (SA_RESTART | SA_SIGINFO); the previous disposition becomes the
 * program's shadow disposition. Returns 0 or -errno. */
int osp__sigprof_install(void (*handler)(int, siginfo_t *, void *));
/* Nonzero when the kernel's SIGPROF handler is neither ours nor SIG_DFL/SIG_IGN (before
 * install: the program has a handler; after: it replaced ours behind libc's back). */
int osp__sigprof_foreign(void);
/* The si_value every SIGPROF of ours carries (ospreyd's and the CPU-time timers'). */
void *osp__sigprof_cookie(void);
/* Is this delivery one of ours? Async-signal-safe. */
int osp__sigprof_is_ours(const siginfo_t *info);
/* Hand a delivery that is not ours to the program's disposition. Async-signal-safe. */
void osp__sigprof_forward(int sig, siginfo_t *info, void *context);

/* Change the calling thread's signal mask with the raw syscall: for the shim's own, brief
 * mask changes, which the program's interposed pthread_sigmask must not see. Returns 0 or
 * -errno. Async-signal-safe. */
int osp__sigmask_raw(int how, const sigset_t *set, sigset_t *old);
/* The C library's pthread_sigmask, bypassing ours (it never blocks the library's internal
 * signals, which setuid and cancellation need). Returns 0 or -errno. */
int osp__sigmask_libc(int how, const sigset_t *set, sigset_t *old);
/* A registered thread whose kernel mask blocks SIGPROF (at boot, or set by a runtime before
 * it registers), or whose creator's program view blocked it (inherited_blocked), keeps it
 * unblocked for real while the program sees it blocked. Called by the thread. */
void osp__sigmask_adopt(int inherited_blocked);
/* Does the program's view of the calling thread's mask block SIGPROF? */
int osp__sigmask_shows_blocked(void);
/* Around an exec or a spawn: the kernel mask the child inherits is the program's view.
 * begin returns whether it blocked SIGPROF; end takes that back (not in a vfork child). */
int osp__sigmask_child_begin(void);
void osp__sigmask_child_end(int blocked);
/* The set a sigwait-like call may wait for: SIGPROF left out of a larger set while its kernel
 * mask keeps SIGPROF unblocked (the call would take our signals for the program's); a set of
 * SIGPROF alone means the program uses it (ours stop). Returns set or copy. */
const sigset_t *osp__sigwait_set(const sigset_t *set, sigset_t *copy);
/* Has the program installed a SIGPROF handler of its own (our shadow of it)? */
int osp__sigprof_program_handles(void);
/* Has the program sent, armed or received a SIGPROF of its own? Then we send no more. */
int osp__sigprof_program_signals(void);
/* 1 for the first caller only: that caller writes the warning line about it. */
int osp__sigprof_claim_warning(void);

/* ---- boot.c ------------------------------------------------------------------------------ */

extern struct osp__registry osp__the_registry;
/* Nonzero while sampling (set after boot succeeds, cleared at exit and in a forked child). */
int osp__is_active(void);
/* The pid that booted the profiler (0 before). */
pid_t osp__boot_pid(void);
/* Parse OSPREY_PROFILE_HZ: clamped to 10..10000, default 997; *bad set for a non-number. */
uint32_t osp__parse_rate(const char *text, int *bad);
uint64_t osp__mono_ns(void);
/* One line on stderr, prefixed "osprey: " (write(2), no stdio buffering). */
void osp__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Record objects loaded since the last look (dl_iterate_phdr; never with the registry lock
 * held). Runs on the program's own threads at moments they are in our code anyway: thread
 * registration and dlclose. */
void osp__images_refresh(void);

/* The bookkeeping a new image of a descendant needs ("OSPREY_PROFILE_ROOT_PID=...",
 * "OSPREY_PROFILE_LAST_PID=..."), kept out of the program's environment (preload.c). */
void osp__bookkeeping_set(long root_pid, long last_pid);
size_t osp__env_count(char *const envp[]);
/* envp with the bookkeeping entries, built in `store` (n + 3 entries, on the caller's stack:
 * no malloc in a forked child), when the new image will be profiled; else envp itself. */
char *const *osp__env_with_bookkeeping(char *const envp[], size_t n, char **store);
/* Declare `name`: envp plus the bookkeeping, on this stack frame. */
#define OSP__ENV(name, envp)                                                                       \
    size_t name##_n = osp__env_count(envp);                                                        \
    char *name##_store[name##_n + 3];                                                              \
    char *const *name = osp__env_with_bookkeeping(envp, name##_n, name##_store)

/* ---- preload.c --------------------------------------------------------------------------- */

/* The next definition of `name` after ours (the C library's), looked up once into *cache;
 * NULL with errno ENOSYS when there is none. */
void *osp__next_symbol(_Atomic(void *) *cache, const char *name);
/* The real pthread_create (the next definition after ours). */
typedef int (*osp__pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                      void *);
osp__pthread_create_fn osp__real_pthread_create(void);
/* Register the calling thread under its name (or "thread") and its kernel tid, and arrange
 * for it to be unregistered when it ends. */
void osp__auto_register(const char *creator_name);
int osp__thread_key_init(void);
/* Arrange for the calling (registered) thread to be unregistered when it ends. */
void osp__thread_key_mark(void);

#endif /* OSP_SHIM_H */
