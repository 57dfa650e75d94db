/* osp_core.h — layer 3 of the shim (see osp_base.h for the list): the state the handler and
 * everything above work on, and the writers of the shared memory.
 *
 *   event_ring.c   writer side of the shared event ring and of each slot's sample ring
 *   unwind.c       the pure frame-pointer walk
 *   python.c       CPython 3.11 found at start; a stack's Python frames (proto/osp_python.h)
 *   disposition.c  SIGPROF: our tag, our handler's installation, the program's disposition
 *                  kept in a shadow, the program's view of SIGPROF in a thread's mask, and
 *                  forwarding a delivery that is not ours
 *   run.c          the run's process-wide state, set by boot: profiling on or off, the pid
 *                  that booted, the process's registry, the shared header, the period
 *   slot.c         what a registered thread writes about itself: its samples, its waits, the
 *                  state ospreyd reads
 *   registry.c     which threads are sampled: slots, generations, THREAD_START/END, each
 *                  thread's CPU-time timer
 *   images.c       loaded objects (dl_iterate_phdr) -> IMAGE records
 *
 * Within the layer, calls go from later files in this list to earlier ones only. Uses layers
 * 1 (osp_base.h) and 2 (osp_policy.h). The unit tests link these directly and use them to
 * plant frame chains, fill rings and drive a registry.
 */
#ifndef OSP_CORE_H
#define OSP_CORE_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "osp_base.h"
#include "osp_policy.h"
#include "osp_ring.h"
#include "osp_unwind_step.h"

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
/* Publish everything up to new_head (pad included): (B); a napping collector is woken once the
 * ring is half full. */
void osp__event_ring_commit(struct osp__event_ring *w, uint64_t new_head);
/* A napping collector (proto/osp_ring.h, "Waking the collector"), once a ring is half full or
 * the slot table is (registry.c): whoever takes `napping` sends the one SIGURG of the nap. The
 * raw system call, which leaves errno as the interrupted code had it. Async-signal-safe. */
void osp__ring_wake_collector(struct osp_ring_header *h);
/* Write one whole record (the record header is filled in here). Returns 0 or -ENOSPC. */
int osp__event_ring_write(struct osp__event_ring *w, uint32_t type, const void *body,
                          uint32_t body_len, const void *tail, uint32_t tail_len);
/* Count lost samples in header->dropped. */
void osp__event_ring_count_drops(struct osp__event_ring *w, uint64_t n);

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

/* Strip pointer-authentication bits from a code address (identity off aarch64).
 * Async-signal-safe. */
uint64_t osp__strip_pac(uint64_t addr);

/* The unwind tables ospreyd publishes (proto/osp_unwind.h), mapped read-only: set by boot
 * before the first sample, or NULL for none (the frame-pointer walk alone). */
void osp__unwind_set_tables(const void *map, uint64_t size);
/* In a forked child: the tables in use become the inherited ones, read until the child's own
 * (osp__unwind_set_tables) have a snapshot. */
void osp__unwind_fork(void);

/* The published snapshot's generation (0: none yet); and whether ospreyd is still building
 * rows (no snapshot yet, or builds under way), when a stack taken now may be cut where a
 * later one is not. Async-signal-safe. */
uint64_t osp__unwind_generation(void);
int osp__unwind_settling(void);

/* The stack from `regs`, leaf first, into out[0..cap): every frame by its unwind row where the
 * tables have one for its pc, else by the frame-pointer chain (in a leaf, the x86_64 prologue
 * and ret case; on aarch64 without tables, osp__unwind_walk_lr). `leaf`: regs are an
 * interrupted instant's (pc precise, lr valid); 0 when regs->pc is a return address (a walk
 * that starts in a caller's frame). Every stack word read lies in [lo, hi), and the stack
 * pointer moves strictly up at each frame. Returns the depth. Async-signal-safe. */
uint32_t osp__unwind(const struct osp__regs *regs, int leaf, uint64_t lo, uint64_t hi,
                     uint64_t *out, uint32_t cap);

/* osp__unwind, saying why the walk ended (*stop, never OSP_UNWIND_GO_ON): the shared walk of
 * proto/osp_unwind_step.h, its reads checked against [lo, hi), the prologue read from the
 * leaf's code; a frame found by the frame pointer while ospreyd is still building rows makes
 * the stack OSP_UNWIND_GUESSED. Async-signal-safe. */
uint32_t osp__unwind_why(const struct osp__regs *regs, int leaf, uint64_t lo, uint64_t hi,
                         uint64_t *out, uint32_t cap, enum osp_unwind_stop *stop);

/* A stack the walk may read: the words of [lo, hi), read in place, or from `copy`, which holds
 * the stack's bytes from address `base` on as they were when copied (a stack that may be
 * unmapped at any time, read once without faulting). */
struct osp__stack_span {
    uint64_t lo, hi;
    const uint8_t *copy; /* NULL: read in place */
    uint64_t base;       /* the address copy[0] holds */
};

/* osp__unwind over several stacks: spans[0] holds regs->sp; the walk moves to another of the
 * n spans (each walked once at most, n <= 32) only at a kernel signal frame whose interrupted
 * stack pointer lies in it; where none holds it, a spare span (a writable `copy` buffer of
 * OSP__STACK_COPY_MAX, hi 0) takes a copy of that stack from its sp on. 0 when n is 0.
 * Async-signal-safe. */
uint32_t osp__unwind_spans(const struct osp__regs *regs, int leaf,
                           const struct osp__stack_span *spans, uint32_t n, uint64_t *out,
                           uint32_t cap);
/* osp__unwind_spans, saying why the walk ended (*stop, as osp__unwind_why's; a stack it could
 * not move to at a signal frame is OSP_UNWIND_FAILED). Async-signal-safe. */
uint32_t osp__unwind_spans_why(const struct osp__regs *regs, int leaf,
                               const struct osp__stack_span *spans, uint32_t n, uint64_t *out,
                               uint32_t cap, enum osp_unwind_stop *stop);
/* osp__unwind_spans_why, and where a stack copy would let ospreyd walk on (*resume: the first
 * frame reached with no row while rows were being built, on the first span read in place;
 * depth 0 when none; NULL: not asked). Async-signal-safe. */
uint32_t osp__unwind_spans_resume(const struct osp__regs *regs, int leaf,
                                  const struct osp__stack_span *spans, uint32_t n, uint64_t *out,
                                  uint32_t cap, enum osp_unwind_stop *stop,
                                  struct osp_unwind_resume *resume);

/* The stack of whoever called our own code: `own_frames` frame records of ours (built with
 * frame pointers) are stepped over from `fp`, then osp__unwind goes on from the caller's
 * return address. 0 when our own records fail the checks. Async-signal-safe. */
uint32_t osp__unwind_caller(uint64_t fp, uint32_t own_frames, uint64_t lo, uint64_t hi,
                            uint64_t *out, uint32_t cap);
/* osp__unwind_caller, saying why the walk ended (OSP_UNWIND_FAILED when our own records failed
 * the checks). Async-signal-safe. */
uint32_t osp__unwind_caller_why(uint64_t fp, uint32_t own_frames, uint64_t lo, uint64_t hi,
                                uint64_t *out, uint32_t cap, enum osp_unwind_stop *stop);

/* ---- stacks.c ---------------------------------------------------------------------------- */

struct osp__slot;

/* How much of a stack no one vouched for the handler copies first (from sp's page on), and
 * how far the copy is read further when the walk reaches its end (unwind.c, copy_further):
 * the size of each slot's copy buffer (address space only until used). */
#define OSP__STACK_COPY_BYTES (16u << 10)
#define OSP__STACK_COPY_MAX   (256u << 10)

/* The stacks the walk from stack pointer sp may read, into out[0..4), the one holding sp
 * first: the thread's own; the fiber stack its runtime declared; the signal stack, when sp is
 * on it; else the memory above sp copied without faulting, up to OSP__STACK_COPY_BYTES or the
 * first unreadable page (read further by the walk, up to OSP__STACK_COPY_MAX). When sp's
 * stack is read in place, the copy buffer comes last as a spare (hi 0), for a stack the walk
 * reaches through a signal frame. 0 when sp is in none. Async-signal-safe. */
uint32_t osp__stack_spans(struct osp__slot *s, uint64_t sp, struct osp__stack_span *out);
/* The stack read in place that holds addr (a frame of the calling thread's): the thread's own
 * or the fiber's its runtime declared; its top, and its bottom in *lo; 0 and 0 for neither
 * (then nothing may be read). Async-signal-safe. */
uint64_t osp__stack_in_place(const struct osp__slot *s, uint64_t addr, uint64_t *lo);

/* ---- python.c ---------------------------------------------------------------------------- */

/* Find CPython 3.11 in the process (_PyRuntime, Py_Version, _PyEval_EvalFrameDefault), or say
 * in one line that another version's functions are not shown. At start, not in the handler. */
void osp__python_detect(void);
/* Read the Python of `runtime` (&_PyRuntime, 0: none) whose _PyEval_EvalFrameDefault is
 * [eval_lo, eval_hi): what detect found, or a test's own; the calling thread's thread state and
 * stack chunk are looked for anew. */
void osp__python_use(uint64_t runtime, uint64_t eval_lo, uint64_t eval_hi);
/* Whether Python frames are read. */
int osp__python_on(void);
/* Put the thread's Python frames (pseudo-pcs, proto/osp_python.h) into the native stack
 * pcs[0..depth), each group just above the _PyEval_EvalFrameDefault frame it ran in; at most
 * cap entries. Returns the new depth. Async-signal-safe. */
uint32_t osp__python_frames(uint64_t *pcs, uint32_t depth, uint32_t cap);

/* ---- disposition.c ----------------------------------------------------------------------- */

/* Install the handler (SA_RESTART | SA_SIGINFO); the previous disposition becomes the
 * program's shadow disposition. Returns 0 or -errno. */
int osp__sigprof_install(void (*handler)(int, siginfo_t *, void *));
/* Nonzero once our handler is installed: from then on the program's SIGPROF lives in the
 * shadow, for the rest of the process's life (forked children included). */
int osp__sigprof_installed(void);
/* Nonzero when the kernel's SIGPROF handler is neither ours nor SIG_DFL/SIG_IGN (before
 * install: the program has a handler; after: it replaced ours behind libc's back). */
int osp__sigprof_foreign(void);
/* Has the program replaced our handler behind the C library (a raw rt_sigaction)? Then its
 * action goes into the shadow and ours is installed again in front of it; returns 1. */
int osp__sigprof_reclaim(void);
/* The si_value every SIGPROF of ours carries (ospreyd's and the CPU-time timers'). */
void *osp__sigprof_cookie(void);
/* Is this delivery one of ours? Async-signal-safe. */
int osp__sigprof_is_ours(const siginfo_t *info);
/* Hand a delivery that is not ours to the program's disposition. Async-signal-safe. */
void osp__sigprof_forward(int sig, siginfo_t *info, void *context);
/* The program's SIGPROF disposition as it sees it (the shadow). Async-signal-safe. */
void osp__sigprof_shadow_read(struct sigaction *out);
/* Replace the shadow (the program's sigaction, signal, ... for SIGPROF). */
void osp__sigprof_shadow_write(const struct sigaction *in);
/* Has the program installed a SIGPROF handler of its own (our shadow of it)? */
int osp__sigprof_program_handles(void);
/* Has the program sent, armed or received a SIGPROF of its own? Then we send no more. */
int osp__sigprof_program_signals(void);
/* The program sends, arms or received a SIGPROF of its own: from now on we send no more.
 * Returns 1 for the first caller only, who stops ours. */
int osp__sigprof_mark_program_signals(void);
/* The program armed a CPU-time timer of its own that sends SIGPROF (setitimer(ITIMER_PROF), a
 * POSIX timer on a CPU-time clock). */
void osp__sigprof_mark_cpu_timer(void);
/* The program may expect a SIGPROF to end a wait: it sends one, waits for one, or arms a timer
 * on another clock that sends it. */
void osp__sigprof_mark_wakes(void);
/* Does the guard leave SIGPROF unblocked in a blocking call? Where the program has a SIGPROF
 * handler and may expect a SIGPROF to end the call: it has one and has armed no CPU-time timer
 * of its own (nothing tells what it waits for: GNU sort's handler, a signal from outside), or
 * it sends, waits for, or arms another timer with SIGPROF. */
int osp__sigprof_guard_stands_aside(void);
/* Does the program have a SIGPROF handler of its own (osp__sigprof_program_handles, as one
 * load)? Hidden: the wrappers test it at every call timed by its clock reads. */
extern _Atomic int osp__sigprof_handles_flag __attribute__((visibility("hidden")));
/* 1 for the first caller only: that caller writes the warning line about it. */
int osp__sigprof_claim_warning(void);
/* The program's view of SIGPROF in the calling thread's mask (boot's mask.c keeps it): the
 * kernel's mask differs from what the program asked for — SIGPROF unblocked where the program
 * blocked it — while osp__view_active, and osp__view_blocked is what the program sees. Read by
 * the handler (a delivery not ours lands where the program blocked SIGPROF: it is put back as
 * pending), hence initial-exec. A vfork child shares them with its parent's thread: it only
 * reads them. */
extern __thread int osp__view_active __attribute__((tls_model("initial-exec")));
extern __thread int osp__view_blocked __attribute__((tls_model("initial-exec")));
/* The kernel's mask of the thread (signals 1-64, SIGPROF left out: osp__sigmask_word) as the
 * shim last set or saw it while keeping the view. A delivery that finds a signal of it
 * unblocked was interrupted where the program set its mask behind the C library (a raw
 * rt_sigprocmask, as Go's runtime does on each thread it starts) or waits with a mask of its
 * own (sigsuspend): there the kernel's mask, SIGPROF unblocked, is the program's. */
extern __thread uint64_t osp__view_real __attribute__((tls_model("initial-exec")));
/* The first word of a signal set (signals 1-64, the kernel's), with what a set asks and the
 * kernel's mask does not hold left out: SIGPROF (the view's), SIGKILL and SIGSTOP (never
 * blocked), and the C library's own two below SIGRTMIN (32 and 33: pthread_sigmask takes them
 * out). Async-signal-safe. */
static inline uint64_t osp__sigmask_word(const sigset_t *set)
{
    uint64_t word;
    memcpy(&word, set, sizeof(word));
    return word & ~((UINT64_C(1) << (SIGPROF - 1)) | (UINT64_C(1) << (SIGKILL - 1)) |
                    (UINT64_C(1) << (SIGSTOP - 1)) | (UINT64_C(1) << 31) | (UINT64_C(1) << 32));
}
/* How many signals of ours this thread's handler has taken (any that carried our cookie):
 * the guard reads it around a call it does not block SIGPROF for, to tell our EINTR from
 * the program's. Written only by the handler on its own thread. */
extern __thread unsigned osp__sigprof_ours_seen __attribute__((tls_model("initial-exec")));

/* ---- run.c ------------------------------------------------------------------------------- */

/* Nonzero while the process is profiled: written by boot only (release on activation, so a
 * thread that sees it sees everything boot set up; cleared at exit, and in a forked child,
 * relaxed there: the child is single-threaded). Hidden in the archive too, so that the
 * interposers' test of it, on every wrapped call, is one instruction, not a load of its
 * address first (bench/guard/). */
extern _Atomic int osp__active_flag __attribute__((visibility("hidden")));
/* Set once the program enters a seccomp sandbox (control.c): from then on nothing of ours
 * makes a system call the sandbox may forbid — the handler returns at once, the exit handler
 * only writes the exit record. */
extern _Atomic int osp__sandboxed;
/* The pid that booted the profiler (0 before); written by boot only. */
extern pid_t osp__booted_pid;
/* Nonzero while sampling (acquire: pairs with boot's release). */
int osp__is_active(void);
/* The pid that booted the profiler (0 before). */
pid_t osp__boot_pid(void);
/* The shared header (set at boot, NULL when inactive or in a forked child). */
extern struct osp_ring_header *osp__header;
/* The sampling period in ns (osp__period_of_rate of the run's rate), set once at boot. */
extern uint64_t osp__period_ns;
void osp__set_period(uint32_t rate_hz);

/* ---- slot.c ------------------------------------------------------------------------------ */

/* Short-wait sites a thread remembers (a loop alternating a few blocking calls). */
#define OSP__SPAN_SITES 4
/* Declared fibers' labels a thread remembers (fibers.c: a runtime alternating a few). */
#define OSP__FIBER_NAMES 4
/* Sites of calls timed by their clock reads a thread remembers: OSP__CALL_SETS sets of two, a
 * site's set the top bits of its key (osp__call_site_entry). */
#define OSP__CALL_SETS_LOG 3
#define OSP__CALL_SITES    (2u << OSP__CALL_SETS_LOG)
/* A sampling timer's signal this late found the thread off its CPU (preempted): a running
 * thread's lands within microseconds, and the scheduler's slices are longer. */
#define OSP__PREEMPTED_NS 200000u
/* A delivery at a system call's return later than this may have waited for the thread: the
 * CPU clock says whether it ran in the call meanwhile (handler.c). */
#define OSP__LANDED_LATE_NS 50000u

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
    int wall_timer;       /* kernel id of the thread's sampling timer (CLOCK_MONOTONIC), or -1 */
    uint64_t wall_due_ns; /* the monotonic time it is armed for, 0 when not armed */
    /* It runs on by itself every period (osp__slot_arm_sampling_periodic): the handler's
     * samples left before it reads the CPU clock and arms it again (handler.c). */
    int wall_periodic;
    uint32_t periodic_left;
    uint64_t jitter_state; /* xorshift state of the sampling timer's jitter */
    /* The handler's own state: only the thread touches it (handler, or its code with SIGPROF
     * blocked), except at exit (see exit.c). */
    struct osp__credit credit;
    uint64_t last_run_ns, last_cpu_ns; /* when the handler last ran, and the CPU clock then */
    uint64_t read_run_ns, read_cpu_ns; /* ... as of the CPU clock's last reading (not reckoned) */
    uint64_t registered_cpu_ns;        /* the CPU clock as it registered (mark_automatic's) */
    int wait_open;                     /* a wait has been captured and not yet written */
    int guard_leaving; /* between a guarded call's return and SIGPROF's unblocking */
    uint32_t rephased; /* sampling timer landings moved on in a row (handler.c: preempted) */
    int in_guard;      /* inside a guarded call (osp__guard_wait_begin .. _end) */
    int sampling_held; /* a timed futex wait disarmed the sampling timer (..._hold_sampling) */
    uint64_t guard_sp; /* the stack pointer there: a frame above it means the call is gone */
    /* A call timed by its clock reads, SIGPROF deliverable (osp__timed_call_begin .. _end):
     * OSP__TIMING_*, and a signal of ours that found the thread writing its wait (taken up
     * when it is done). Read by the handler on the same thread: volatile. */
    volatile int timing;
    volatile int timing_deferred;
    uint64_t timed_end_ns; /* when its last timed call returned, a stamp (0: none yet) */
    uint64_t timing_sp;    /* osp__timed_call_begin's frame as the call began */
    uint64_t timed_t0_ns;  /* when the call timed now began, a stamp (a wait flushed at a stop) */
    /* The sites of its last calls timed so (their return address and frame, hashed), each
     * with the time until its next sampling point (osp__call_wait_weight): two ways a set,
     * the latest new site of a set first. */
    struct osp__call_site {
        uint64_t key;
        uint64_t until_ns;
    } call_sites[OSP__CALL_SITES];
    uint64_t wait_t_ns, wait_cpu_ns; /* when it was captured, and the CPU clock then */
    int64_t wait_carry_ns; /* the part of the shim's waits no WAITING sample stood for yet */
    uint32_t wait_flags;   /* OSP_SPAN_* of the open wait, for ospreyd's timing */
    uint64_t guard_cpu_ns; /* the CPU clock as a guarded call began, when a sample was due */
    /* The sites of the last short waits written (slot.c's emit_span): a site's short waits
     * are written again once they add up to half a period. */
    struct {
        uint32_t hash;
        uint64_t unwritten_ns;
    } span_sites[OSP__SPAN_SITES];
    uint32_t span_next;          /* the entry the next new site takes */
    uint64_t voluntary_switches; /* the thread's, at its last short wait (emit_span) */
    uint32_t wait_depth;
    enum osp_unwind_stop wait_stop; /* why the walk of wait_pcs ended */
    uint64_t wait_generation;       /* of the unwind snapshot its stack was taken with */
    uint64_t wait_pcs[OSP_MAX_DEPTH];
    /* The handler's scratch for a wait's capture (the wait's stack before wait_pcs takes it,
     * wait_pcs still holding the previous wait's until it is written): not sample_pcs, which
     * keeps the latest on-CPU sample's stack. */
    uint64_t capture_pcs[OSP_MAX_DEPTH];
    /* The handler's scratch for a sample's stack: here, not in its frame, so the handler
     * needs little of a thread's stack (16 KiB thread stacks, coroutines). The handler does
     * not nest on its thread (SIGPROF is blocked while it runs). */
    uint64_t sample_pcs[OSP_MAX_DEPTH];
    /* The depth of the latest on-CPU sample's stack in sample_pcs (0: none, or that sample was
     * a guarded call's, at the wait's stack): where a thread that exits was last seen running,
     * and where the CPU time its timers missed since is paid (registry.c). */
    uint32_t sample_depth;
    enum osp_unwind_stop sample_stop; /* why that stack's walk ended */
    uint64_t start_pc; /* the start routine of a thread pthread_create started, else 0 */
    /* The stack the thread runs on now as its runtime said (osp_prof_fiber_switch), [lo, hi);
     * hi 0: none said. Written by the thread, read by its handler (stacks.c). */
    uint64_t fiber_lo, fiber_hi;
    /* The fiber it runs on now as its runtime said, valid while fiber_hi is nonzero (written
     * before it): the id (0: the thread's own) and the runtime's label, not read until a
     * sample is taken on the fiber (fibers.c). */
    int64_t fiber_id;
    const char *fiber_label;
    /* The fiber the thread last wrote to its ring (OSP_REC_FIBER); 0 at registration. */
    int64_t fiber_written;
    /* The labels of the last fibers written, read once each (fibers.c): by id and pointer. */
    struct osp__fiber_name {
        int64_t id;
        const char *label;
        uint32_t len;
        char bytes[OSP_MAX_LABEL];
    } fiber_names[OSP__FIBER_NAMES];
    uint32_t fiber_names_next;
    /* The handler's copy of a stack no one vouched for (stacks.c), mapped at its first use. */
    uint8_t *stack_copy;
};

/* The fields of a SAMPLE_WEIGHTED record (or of a STACK_COPY's first part) of slot s, its
 * header saying `type` and `size`. Async-signal-safe. */
void osp__sample_record(struct osp_rec_sample_weighted *rec, uint32_t type, uint32_t size,
                        const struct osp__slot *s, uint64_t t_ns, uint32_t state, uint32_t weight,
                        uint32_t depth, enum osp_unwind_stop stop);
/* Write one SAMPLE_WEIGHTED record to `w` for slot s, with why its stack's walk ended
 * (OSP_UNWIND_GO_ON: not said). Returns 0, or -ENOSPC when the ring is full (the caller counts
 * the drop, or carries the weight). Async-signal-safe. */
int osp__emit_sample(struct osp__event_ring *w, struct osp__slot *s, uint64_t t_ns, uint32_t state,
                     uint32_t weight, const uint64_t *pcs, uint32_t depth,
                     enum osp_unwind_stop stop);
/* fibers.c: before a sample in the slot's own ring, an OSP_REC_FIBER record when the fiber
 * its runtime declared is not the one the ring last said (and the reader takes them). 0, or
 * -ENOSPC when the ring is full. Async-signal-safe. */
int osp__fiber_note(struct osp__event_ring *w, struct osp__slot *s);
/* stackcopy.c: the stack from sp up into buf[0..size), as a stack copy reads it (pieces of
 * 32 KiB, page by page: the first unreadable page ends it, nothing faults); the bytes read.
 * Async-signal-safe. */
size_t osp__stack_copy_read(uint64_t sp, uint8_t *buf, uint32_t size);
/* stackcopy.c: write the sample as one STACK_COPY record (proto/osp_ring.h, "Stack copies"):
 * the stack copied from resume's frame on into a free buffer of the ring's pool, with the
 * handler's pcs[0..depth) and stop. Returns 0; -ENOSPC when the ring is full (as
 * osp__emit_sample); -EBUSY when no copy could be taken (no pool, every buffer busy, the stack
 * unreadable): the caller writes the sample as it is. Async-signal-safe. */
int osp__emit_stack_copy(struct osp__event_ring *w, struct osp__slot *s, uint64_t t_ns,
                         uint32_t weight, const uint64_t *pcs, uint32_t depth,
                         enum osp_unwind_stop stop, const struct osp_unwind_resume *resume);
/* Does ospreyd time this run's waits from the kernel's context-switch records (the shim opened
 * and mapped them at boot, and handed them on)? Then a wait is written as its site
 * (OSP_REC_WAIT_SPAN), from the start of the run. Async-signal-safe. */
int osp__kernel_waits(void);
/* Were the switch events opened and handed on (osp__kernel_waits is 0 without)? One load for
 * the wrappers that ask at every call (guard.c). */
extern _Atomic int osp__switches_on __attribute__((visibility("hidden")));
/* The context-switch events' rings, mapped by the shim from their opening (switches.c) until
 * ospreyd has mapped them too: the kernel keeps a record only once a ring is mapped. The
 * first osp__kernel_waits() that sees ospreyd's mark unmaps them, as do exit and fork's
 * child (osp__switch_maps_release). Async-signal-safe. */
void osp__switch_maps_set(void *const *maps, int n, size_t size);
void osp__switch_maps_release(void);
/* No ospreyd will read the records (it could not be started, a forked child): the shim times
 * waits itself again. Async-signal-safe. */
void osp__kernel_waits_off(void);
/* 1 from a start whose switch records were refused (or after osp__kernel_waits_off): the
 * futex-based waits' interposers (guard.c) time their calls; 0 and they pass every call on
 * at the cost of this load. Relaxed: set at a start, before the program's threads run, and by
 * kernel_waits_off. */
extern _Atomic int osp__calls_timed_flag __attribute__((visibility("hidden")));
void osp__calls_timed_set(int on);

/* registry.c: the lock around the window in which the kernel takes our timers' ids from us
 * (the program's timer_create waits for it). Not async-signal-safe. */
void osp__timer_ids_lock(void);
void osp__timer_ids_unlock(void);
/* In a forked child, before its first thread registers: the lock and the ids afresh. */
void osp__timer_ids_after_fork(void);
/* The handler found the thread blocked while ospreyd times waits: the open wait (if any) is
 * written as ending now, and a new one opens here with the stack pcs[0..depth). Async-signal-safe.
 */
void osp__wait_captured(struct osp__slot *s, uint64_t now_ns, const uint64_t *pcs, uint32_t depth);
/* A guarded call left without its end (longjmp out of a signal handler, cancellation): the
 * calling thread's code at stack pointer sp is above the call's frames while the slot still
 * says it is inside. Then: its wait is written, SIGPROF (blocked by the guard, never by the
 * program) unblocked, its sampling timer armed again; 1 when it did. A handler that runs
 * during a guarded call is below those frames (or on another stack) and repairs nothing. */
int osp__guard_repair_if_left(struct osp__slot *s, uint64_t sp);
/* Write the thread's open wait, if any, ending at now_ns, to `w`. Async-signal-safe. */
void osp__close_wait(struct osp__event_ring *w, struct osp__slot *s, uint64_t now_ns,
                     uint64_t cpu_ns);
/* Tell ospreyd the slot's state and when its next sample is due (proto/osp_ring.h, "Slots").
 * Async-signal-safe. */
void osp__slot_publish(struct osp__slot *s, uint32_t state, uint64_t due_ns);
/* Ask ospreyd to look at this slot again (proto/osp_ring.h, attention). Async-signal-safe. */
void osp__slot_wants_attention(const struct osp__slot *s);
/* Arm the thread's sampling timer (one shot, CLOCK_MONOTONIC) for due_ns plus a jitter of up
 * to 60% of a period; the thread itself calls it, so the kernel's timer sits on its CPU and
 * interrupts it in place. Nothing while our signals are paused. Async-signal-safe. */
void osp__slot_arm_sampling(struct osp__slot *s, uint64_t due_ns);
/* Samples a periodic sampling timer takes before the handler reads the CPU clock and arms it
 * again (handler.c). */
#define OSP__PERIODIC_RUN 8u
/* The share of a CPU (of 1024) since the last reading above which the sampling timer runs
 * every period: a thread this close to running throughout lands on time. */
#define OSP__PERIODIC_SHARE 1000u
/* ... the same, and then every period on its own (it_interval), for a thread that has a CPU
 * to itself: the next OSP__PERIODIC_RUN - 1 samples of a running thread arm nothing. */
void osp__slot_arm_sampling_periodic(struct osp__slot *s, uint64_t due_ns);
/* The sampling timer after a landing that found the thread blocked: as a one-shot timer would
 * be (spent when it was the one that fired, else due when it was due), not every period.
 * Async-signal-safe. */
void osp__slot_sampling_once(struct osp__slot *s, int it_fired);
/* A periodic sampling timer's landing that arms nothing: it fires again at next_ns (or is
 * disarmed, our signals paused). Async-signal-safe. */
void osp__slot_sampling_goes_on(struct osp__slot *s, uint64_t next_ns);
/* The profile has ended: a periodic sampling timer is disarmed. Async-signal-safe. */
void osp__slot_sampling_stopped(struct osp__slot *s);
/* The next number of the slot's own generator (its jitter_state, xorshift64*): the sampling
 * timer's jitter, and the handler's draws. Async-signal-safe. */
uint64_t osp__slot_random(struct osp__slot *s);
/* Arm the thread's CPU-time timer to fire once it has used cpu_ns more CPU time (from
 * last_cpu_ns). Nothing while our signals are paused. Async-signal-safe. */
void osp__slot_arm_cpu_timer(struct osp__slot *s, uint64_t cpu_ns);
/* A registered thread's guard (guard.c): it blocks now in a call with SIGPROF blocked; the call
 * began at called_ns (CLOCK_MONOTONIC; 0: now), where the guard waited before. */
void osp__guard_wait_begin(struct osp__slot *s, const void *fn, uint64_t called_ns);
/* ... and the call returned: write its wait when it lasted long enough. SIGPROF still blocked. */
void osp__guard_wait_end(struct osp__slot *s);
/* A timed futex wait (a lock, a condition variable, a join: no CPU time of the thread's in
 * it) holds the sampling timer, so that no signal of ours lands in it, and
 * osp__timed_call_end arms it again. */
void osp__guard_hold_sampling(struct osp__slot *s);

/* A call timed by its clock reads alone, SIGPROF left deliverable (guard.c's futex-based waits,
 * and the reads and writes of a pipe the program made, which SA_RESTART resumes after our
 * handler): where the shim times waits. The stack is walked only for a wait that is written:
 * one of a period or more (weighed with the thread's carry), a shorter one with the odds of
 * its length in periods (one period's weight), so totals and sites stay right in expectation
 * and a call that did not wait costs two stamps (stamp.c: the CPU's counter) and a look at its
 * site. slot.c, "A call timed by its clock". */
enum { OSP__TIMING_NONE, OSP__TIMING_IN_CALL, OSP__TIMING_WRITING };
/* The call begins (the slow way: a wait captured before it is over; hold: a futex wait, whose
 * sampling timer is held while it blocks, osp__guard_hold_sampling); sp: the frame of the
 * caller's part that times it. Returns the stamp at its start (osp__stamp_ns), 0: not timed. */
uint64_t osp__timed_call_begin_slow(struct osp__slot *s, int hold, uint64_t sp);
/* ... and returned (the slow way): its wait written at the caller of the function that called
 * this one (fn, the C library's, its leaf), when it weighs a period or more at its site (site:
 * the call's return address and frame, hashed); fd_call: a read or write, written only if the
 * thread gave up its CPU (a call with room or data waiting is no wait). now: the stamp at its
 * return. errno is kept. */
void osp__timed_call_end_slow(struct osp__slot *s, uint64_t t0, uint64_t now, const void *fn,
                              uint64_t site, int fd_call);

/* The state of the thread's timing, ordered with the code around it for the handler (which
 * runs on this thread) by signal fences. */
static inline void osp__timing_set(struct osp__slot *s, int state)
{
    atomic_signal_fence(memory_order_seq_cst);
    s->timing = state;
    atomic_signal_fence(memory_order_seq_cst);
}

/* The first of the two entries of a site's set (the top bits of its key). */
static inline struct osp__call_site *osp__call_site_set(struct osp__slot *s, uint64_t site)
{
    return &s->call_sites[(site >> (64 - OSP__CALL_SETS_LOG)) * 2];
}

/* May a call of this thread's be timed the quick way (guard.c's OSP__TIMED_PART)? Where the
 * shim times waits, with no program handler of SIGPROF and no kernel records to ask about, the
 * stamps' scale known (osp__timed_gate: one load; the long way asks osp__timed_call_applies),
 * and nothing to settle as it begins: no wait captured before it, not inside another timed call
 * (and so no signal to take up: timing_deferred is set only while the thread writes, and
 * cleared before it says it is done, or left set only while sampling_held sends its end the
 * slow way). */
static inline int osp__timed_call_quick(const struct osp__slot *s)
{
    return atomic_load_explicit(&osp__timed_gate, memory_order_acquire) == 0 &&
           s->timing == OSP__TIMING_NONE && !s->wait_open && s->shared != NULL;
}

/* The call begins at stamp now (osp__timed_call_quick held: osp__stamp_scaled): the thread
 * says it is in the call. */
static inline uint64_t osp__timed_call_enter(struct osp__slot *s, uint64_t sp, uint64_t now)
{
    s->timing_sp = sp;
    s->timed_t0_ns = now;
    /* The thread may sleep in the call: its next landing reads the CPU clock, not reckons it. */
    s->periodic_left = 0;
    osp__timing_set(s, OSP__TIMING_IN_CALL);
    return now;
}

/* The call begins (the timed part's slow way, whose quick way is osp__timed_call_quick and
 * _enter). A call that needs nothing settled first (no futex wait's timer to hold, no wait
 * captured before it, no signal taken up, not inside another timed call) takes a stamp and
 * says it is in the call: a dozen instructions, no system call. */
static inline uint64_t osp__timed_call_begin(struct osp__slot *s, int hold, uint64_t sp)
{
    if (hold || s->timing != OSP__TIMING_NONE || s->wait_open || s->timing_deferred ||
        s->shared == NULL)
        return osp__timed_call_begin_slow(s, hold, sp);
    return osp__timed_call_enter(s, sp, osp__stamp_ns());
}

/* ... and returned. A call short of its site's next sampling point (osp__call_wait_weight: most
 * of them, and every call that did not block) moves that point by its length and is done: a
 * stamp, the site's two entries looked at, three stores. Anything else goes the slow way. */
static inline void osp__timed_call_end(struct osp__slot *s, uint64_t t0, const void *fn,
                                       uint64_t site, int fd_call)
{
    uint64_t now = osp__stamp_ns();
    uint64_t length = now - t0; /* a stamp behind t0 (another core's counter): the slow way's */
    struct osp__call_site *e = osp__call_site_set(s, site);
    if (e->key != site && (++e)->key != site)
        goto slow;
    uint64_t until = e->until_ns;
    if (length < until && until <= osp__period_ns && !s->sampling_held) {
        e->until_ns = until - length;
        s->timed_end_ns = now;
        osp__timing_set(s, OSP__TIMING_NONE);
        return;
    }
slow:
    osp__timed_call_end_slow(s, t0, now, fn, site, fd_call);
}

/* ---- registry.c -------------------------------------------------------------------------- */

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

/* The process's registry (run.c): boot initialises it. */
extern struct osp__registry osp__the_registry;

/* The calling thread's slot, read by the SIGPROF handler; initial-exec so that reading it
 * never allocates TLS inside the handler. */
extern __thread struct osp__slot *osp__tls_slot __attribute__((tls_model("initial-exec")));

int osp__registry_init(struct osp__registry *reg, struct osp__event_ring *ring, uint32_t capacity);
void osp__registry_destroy(struct osp__registry *reg);
/* Register the calling thread (re-registering it if it already is). Returns 0 or -errno. */
int osp__registry_register(struct osp__registry *reg, int64_t fiber, const char *label);
/* Mark the calling thread's registration automatic: a later pthread_setname_np renames it. */
void osp__registry_mark_automatic(struct osp__registry *reg, uint64_t start_pc);
/* An automatically registered thread was named: end its generation and start the next one
 * under the new label (a runtime's explicit label is never replaced). Returns 1 if renamed. */
int osp__registry_rename(struct osp__registry *reg, pthread_t thread, const char *label);
/* At exit, sampling over (inactive, timers disarmed): the calling thread's CPU time since its
 * last sample, paid as unregistering pays it (a short forked child's last period). */
void osp__registry_pay_at_exit(struct osp__registry *reg);
/* Unregister the calling thread; when it returns nothing touches the thread any more. */
void osp__registry_unregister(struct osp__registry *reg);
/* The calling thread's signal stack from the registry (registered threads without one of
 * their own get one, for our handler): is ss_sp its base? And: the program replaced it (its
 * own sigaltstack call succeeded), so it is freed. */
int osp__altstack_is_ours(const void *ss_sp);
void osp__altstack_replaced(void);
/* Slots a shared table has room for; the table itself (NULL: bookkeeping only). */
void osp__registry_set_table(struct osp__registry *reg, struct osp_ring_header *header);
/* At exit: write every other thread's open wait to the event ring. Called with the registry
 * lock held. */
void osp__registry_flush_waits(struct osp__registry *reg, uint64_t now_ns);
/* Take the registry lock, waiting at most ~50 ms: for paths that can run inside the program's
 * signal handlers, possibly on a thread interrupted while it held the lock. Returns 0 with the
 * lock held, -1 without. */
int osp__registry_lock_briefly(struct osp__registry *reg);
/* Disarm every registered thread's timers (timers are process-wide ids); nothing when the
 * lock cannot be had briefly. */
void osp__registry_disarm_timers(struct osp__registry *reg);
/* Whether any slot's ring was ever written to (a sample, a wait): call with the lock held. */
int osp__registry_recorded(struct osp__registry *reg);
/* After a pause that ends (an exec that failed): every thread's sampling timer again, one
 * period from now. Armed from here they fire on this CPU once; each thread's handler then arms
 * its own on its own CPU. */
void osp__registry_rearm_sampling(struct osp__registry *reg);

/* ---- images.c ---------------------------------------------------------------------------- */

struct osp__image {
    uint64_t base, slide, text, text_size;
    uint32_t flags;
    int sent;
    int seen;          /* present in the latest scan */
    int gone;          /* absent from a later scan: to be sent as unloaded, then dropped */
    uint64_t at_ns;    /* CLOCK_MONOTONIC when it appeared (0: in the first scan), or when
                          it was seen gone */
    char *path;        /* absolute: what the IMAGE record carries */
    char *loader_name; /* the name as the loader reports it, which identifies the object in
                          later scans even after the program changes directory */
};

struct osp__images {
    struct osp__image *items;
    size_t count, capacity;
    unsigned long long adds, subs; /* dlpi_adds/dlpi_subs of the latest scan */
    uint64_t scan_ns;              /* when the current scan began; 0 during the first */
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
void osp__images_unsend(struct osp__images *im);

/* ---- greeting.c -------------------------------------------------------------------------- */

/* How long a greeter waits for the collector's answer before it starts its own (README.md,
 * "The collector's answer": twenty times the slowest answer measured under load). */
#define OSP__GREETING_ANSWER_MS 100

/* The collector's answer to the greeting sent on `sock`, waited for until `end_ns`
 * (CLOCK_MONOTONIC; a signal restarts the wait with what is left), then the greeter's confirm
 * (proto/osp_ring.h, "Forked children"): 0 once the confirm is sent (the collector follows
 * this process); else negative, and the collector does not (no answer in time: the caller
 * closes `sock`, which drops the greeting; EPIPE: it gave up on the confirm first). */
int osp__greeting_answered_by(long sock, uint64_t end_ns);
/* A forked child's greeting, just sent on `sock` (kept here), left open: its answer is
 * looked for later (osp__greeting_poll, osp__greeting_settle). 0, or -errno (`sock` the
 * caller's). */
int osp__greeting_defer(long sock);
/* Is a greeting deferred and not yet settled? A relaxed load. Async-signal-safe. */
int osp__greeting_pending(void);
/* From the handler: the deferred greeting's answer, if it has come, confirmed. Never waits.
 * Async-signal-safe. */
void osp__greeting_poll(void);
/* The deferred greeting settled: `wait` >= 0: its answer waited for up to the end of its
 * OSP__GREETING_ANSWER_MS, then confirmed; < 0: given up (closed: the collector drops it).
 * 1 when none was deferred (or it was settled already), 0 when the collector follows this
 * process, else negative (it does not). */
int osp__greeting_settle(int wait);
/* In a forked child: its parent's deferred greeting, the parent's to settle (its copy of
 * the socket closed). */
void osp__greeting_forget(void);

#endif /* OSP_CORE_H */
