/* ospd.h — the internals of ospreyd that do not touch the operating system: the collector
 * (threads, images, interned stacks, samples), the event-ring parser that feeds it, and the
 * raw-profile writer. ospreyd.c wires them to shared memory, libuv and the target's pid; the
 * tests drive them directly with hand-built rings.
 *
 * Everything here is single-threaded: one collector belongs to one caller.
 */
#ifndef OSPD_H
#define OSPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "osp_ring.h"

/* Limits the daemon imposes on what it keeps. A record beyond a structural limit
 * (OSPD_MAX_SLOTS) rejects the ring; beyond a capacity limit it is dropped and counted. */
#define OSPD_MAX_SLOTS   (1u << 16)          /* highest registry slot number accepted, exclusive */
#define OSPD_MAX_THREADS (1u << 20)          /* registrations kept */
#define OSPD_MAX_IMAGES  (1u << 13)          /* distinct images kept */
#define OSPD_MAX_STACKS  (1u << 30)          /* distinct stacks kept (indices fit 31 bits) */
#define OSPD_MAX_SAMPLES (UINT64_C(1) << 32) /* samples kept */
#define OSPD_ERROR_SIZE  256u                /* bytes of a rejection message, NUL included */
/* Default budget for the samples and stacks tables. Growth stops once their capacity reaches
 * it (one doubling may overshoot it), and later samples are dropped and counted: 512 MiB keeps
 * about 30 million samples in memory. ospreyd spills its samples to disk (spill.c), so there
 * the budget bounds the stacks and one batch; it holds every sample only where spilling
 * failed. */
#define OSPD_DEFAULT_MEMORY_LIMIT (UINT64_C(512) << 20)

/* Grow `*array` (of `*cap` elements of `size` bytes) so it holds at least `need` elements,
 * doubling. Returns 0 or -ENOMEM, leaving the array as it was. */
int ospd_grow(void **array, uint64_t *cap, uint64_t need, size_t size);

/* ------------------------------------------------------------------------------------------ */
/* Stack interner (intern.c). */

/* A pc at or above this is the kernel's (x86_64 and arm64 keep the kernel in the upper half):
 * the kernel frames an attach records below the user ones. The raw file writes them as the
 * negative numbers of the same 64 bits (proto/raw-format.md, "stacks[]"). */
#define OSPD_KERNEL_PC (UINT64_C(1) << 63)

/* One distinct pc sequence. Its pcs live in the interner's pool at [first, first + depth). */
struct ospd_stack {
    uint64_t first;
    uint16_t depth; /* <= OSP_MAX_DEPTH */
    uint8_t end;    /* why its walk ended (ospd_stack_set_end), 0: not said */
    uint8_t reserved;
    uint32_t hash;
};

struct ospd_interner {
    uint64_t *pool;              /* every distinct stack's pcs, back to back */
    uint64_t pool_len, pool_cap; /* in pcs */
    struct ospd_stack *stacks;   /* stack index -> where its pcs are */
    uint32_t count, stacks_cap;
    uint32_t *slots;    /* open-addressing table: stack index + 1, 0 = empty */
    uint32_t slots_cap; /* a power of two, or 0 before the first insertion */
};

void ospd_interner_init(struct ospd_interner *in);
void ospd_interner_free(struct ospd_interner *in);
/* Return the index of the stack `pcs[0..depth)` (depth >= 1), adding it if it is new.
 * Returns -ENOMEM when it is new and memory (or OSPD_MAX_STACKS) ran out; the interner is
 * unchanged then. */
int64_t ospd_intern(struct ospd_interner *in, const uint64_t *pcs, uint32_t depth);
/* The index of the stack `pcs[0..depth)` if it is already interned, else -ENOENT. */
int64_t ospd_intern_lookup(const struct ospd_interner *in, const uint64_t *pcs, uint32_t depth);
/* The pcs of stack `index` (< in->count); *depth receives its length. */
const uint64_t *ospd_stack_pcs(const struct ospd_interner *in, uint32_t index, uint32_t *depth);
/* Why the walks of stack `index` ended (enum osp_unwind_stop, proto/osp_unwind_step.h): the
 * first reason a walk said, except that a guess gives way to any other (the same frames found
 * again by rows are no guess). `stop` 0 (not said) changes nothing. */
void ospd_stack_set_end(struct ospd_interner *in, uint32_t index, uint32_t stop);
/* The reason kept for stack `index`, 0 when no walk said. */
uint32_t ospd_stack_end(const struct ospd_interner *in, uint32_t index);

/* ------------------------------------------------------------------------------------------ */
/* Collector (collect.c; set up and freed in collector.c, the ring framed in ring-walk.c). */

struct ospd_thread {
    int64_t fiber;
    int32_t tid;
    int32_t proc_tid; /* the number /proc gives it (ospd_proc_tid), once asked; else 0 */
    uint32_t slot, generation;
    char *label; /* valid UTF-8, NUL-terminated */
    /* A fiber a runtime declared (OSP_REC_FIBER) on the registration (slot, generation), whose
     * thread `tid` it ran on: its samples, not the kernel thread's waits and CPU time. */
    bool declared;
};

/* A reason of ospreyd's own beside the shim's (enum osp_escape): a forked child that runs as
 * another user than its parent's collector (forks.c). */
#define OSPD_ESCAPE_OTHER_USER 0x100u

struct ospd_escaped {
    int32_t pid;
    uint32_t reason; /* enum osp_escape, or OSPD_ESCAPE_OTHER_USER */
    char *path;      /* valid UTF-8, NUL-terminated */
};

struct ospd_image {
    uint64_t base, slide, text, text_size;
    char *path;               /* valid UTF-8, NUL-terminated */
    char arch[OSP_ARCH_SIZE]; /* NUL-terminated */
    bool main;
    /* on the samples' t_rel_ns axis, 0 when unknown: when the shim saw the object appear
     * (0 too for one there from the start) and saw it gone */
    uint64_t loaded_ns, unloaded_ns;
};

/* One sample, compactly. */
struct ospd_sample {
    uint64_t t_rel_ns;
    uint32_t thread;      /* index into threads */
    uint32_t stack_state; /* stack index << 1 | state */
    uint32_t weight;      /* sampling periods it stands for, >= 1 */
};

/* What the current registration of a slot refers to. */
struct ospd_slot {
    uint32_t generation;
    uint32_t thread;    /* index into threads; valid when `used` */
    uint32_t on_thread; /* where its samples go now: `thread`, or a declared fiber's entry */
    int64_t last_stack; /* the slot's last sampled stack for REPEAT, -1 when none */
    bool used;
};

/* How the target ended, as far as the daemon knows. */
enum ospd_exit_status {
    OSPD_EXIT_UNKNOWN = 0,   /* still running */
    OSPD_EXIT_EXITED,        /* the shim posted its exit record */
    OSPD_EXIT_KILLED,        /* died by a signal, learnt from /proc while it was a zombie */
    OSPD_EXIT_VANISHED,      /* ended without an exit record; how is unknown */
    OSPD_EXIT_RING_REJECTED, /* the ring broke the protocol; collection stopped */
    OSPD_EXIT_STOPPED,       /* the profile's duration ended; the program runs on */
    OSPD_EXIT_LEFT_SESSION   /* a forked child left the program's session (a daemon): the
                                profile ends there, the process runs on unprofiled */
};

/* ------------------------------------------------------------------------------------------ */
/* Waits timed from the kernel's context-switch records (waits.c; proto/osp_ring.h, "Waits
 * from the kernel"): per thread, the blocks the kernel saw, the sites the shim reported
 * (OSP_REC_WAIT_SPAN), and the WAITING samples made of both. */

struct ospd_wait_block {
    uint64_t start_ns, end_ns;
};
struct ospd_wait_span {
    uint64_t start_ns, end_ns;
    uint32_t stack, flags;
};
struct ospd_wait_thread {
    int32_t tid;
    uint8_t state;        /* OSPD_KSTATE_* */
    bool tentative;       /* a block ended at tentative_end, maybe only for our handler */
    uint64_t since_ns;    /* when the current state began */
    uint64_t block_start; /* of the open (or tentative) block */
    uint64_t tentative_end;
    uint64_t tentative_run_ns; /* of that wake-up, while it was on a CPU */
    uint64_t captures[8];      /* the last capture instants the shim reported (a ring) */
    uint32_t capture_next;
    uint64_t poked_for; /* block_start of the block ospreyd last asked the stack of */
    int64_t credit_ns;  /* waited time not yet paid as WAITING periods */
    uint64_t waited_ns, preempted_ns;
    bool ended; /* its registration ended: the block its exit opens is not a wait */
    struct ospd_wait_block *blocks; /* finished, not yet given a site */
    uint32_t block_count, blocks_cap;
    struct ospd_wait_span *spans; /* reported, in time order */
    uint32_t span_count, spans_cap;
    uint64_t span_horizon; /* end of the last span reported */
    int64_t last_stack;    /* the site of the last wait given one, -1 when none */
    int64_t last_capture;  /* the stack of the last capture span, -1 when none */
    uint32_t site_streak;  /* captures in a row, in blocks of their own, at that same site (<= 4) */
    uint64_t streak_block; /* the block the last of them fell in */
    uint32_t since_asked;  /* blocks since the thread was last asked for its site */
    uint64_t from_ns;      /* its registration: the switches of its tid before are not its */
};
enum { OSPD_KSTATE_UNKNOWN = 0, OSPD_KSTATE_RUNNING, OSPD_KSTATE_BLOCKED, OSPD_KSTATE_PREEMPTED };

struct ospd_waits {
    uint64_t since_ns; /* header.kernel_waits_ns; 0 when waits are the shim's */
    /* The shim timed them because perf_event_open was refused: the errno it got (0: not said,
     * an older shim), kernel.perf_event_paranoid then (INT32_MIN: unknown), and what refused
     * it ("perf_event_paranoid", "seccomp", "kernel"; switch-refused.c). */
    int32_t refused_errno;
    int32_t refused_paranoid;
    const char *refused_by;
    struct ospd_wait_thread *by_thread; /* indexed like the collector's threads */
    uint32_t cap;
    uint32_t *tid_slots; /* open addressing: tid -> thread index + 1 (the latest of the tid) */
    uint32_t tid_cap;
    uint64_t lost_records; /* PERF_RECORD_LOST counts */
    uint64_t unattributed; /* periods of waits given no site (none known for their thread) */
    uint64_t asked;        /* threads asked for their wait's site (a SIGPROF each) */
    uint64_t blocks;       /* blocks timed */
    /* The last instant the shim's handler found thread i blocked (its slot's capture_ns). */
    uint64_t (*capture_of)(void *ctx, uint32_t thread);
    /* When thread i registered (its slot's registered_ns; 0: not known), with capture_ctx. */
    uint64_t (*registered_of)(void *ctx, uint32_t thread);
    void *capture_ctx;
};

/* A JIT's function kept from its map (jit-map.c): code at [start, start + size), `name`
 * valid UTF-8, malloc'd. */
struct ospd_jit_symbol {
    uint64_t start, size;
    char *name;
};
#define OSPD_JIT_MAP_MAX (UINT64_C(256) << 20) /* bytes of one JIT map read */
#define OSPD_JIT_MAPS    8u                    /* maps named in the raw file */

/* A sample held with a copy of its stack until the rows its walk needs are published
 * (copies.c, proto/osp_ring.h "Stack copies"). */
struct ospd_held_copy {
    uint64_t sample; /* its index among the collector's samples, spilled ones included */
    uint32_t resume; /* pcs[resume] is the frame the copy's walk starts at */
    uint32_t depth;  /* pcs[0..depth): the handler's walk */
    uint32_t stop;   /* and why it ended */
    bool first;      /* the resume frame is an interrupted instant's */
    uint64_t pc, sp, fp, lr;
    uint64_t pcs[OSP_MAX_DEPTH];
    uint8_t *bytes; /* [sp, sp + len) of the stack, as it was */
    uint32_t len;
};
struct ospd_copies {
    struct ospd_held_copy *held;
    uint32_t count, cap;
    uint64_t bytes;       /* held copies' bytes, bounded by OSPD_COPIES_MAX_BYTES */
    uint64_t tables_seen; /* the table generation the held ones were last looked at with */
    /* Records read with a copy; copies walked again (their samples changed); copies whose
     * sample kept the handler's stack (let go past the bound, or spilled); samples the shim
     * could not copy (header.copies_refused, read at the end); copies that filled their
     * buffer and were read on from the live stack, or were not because it had moved. */
    uint64_t taken, walked, kept, refused, read_on, moved;
};
#define OSPD_COPIES_MAX_BYTES (48u << 20)
/* A copy that filled its buffer is read on from the live stack (copies.c): this far at most,
 * once its last OSPD_COPY_READ_ON_CHECK bytes are found still there. */
#define OSPD_COPY_READ_ON       (192u << 10)
#define OSPD_COPY_READ_ON_CHECK 64u

struct ospd_collector {
    /* Identity, copied from the ring header at attach (or set by a test). */
    int32_t pid; /* in the collector's pid namespace, the program's own (getpid); the raw pid */
    /* The number /proc gives it (ospd_proc_pid): pid, unless this /proc is another pid
     * namespace's; 0 when /proc does not show it (then nothing is read from /proc). Every
     * /proc path takes this one; kill, pidfd_open, process_vm_readv and the raw file pid. */
    int32_t proc_pid;
    int32_t parent_pid;           /* the process that started it, 0 when unknown */
    bool forked;                  /* a forked child of a profiled process (its parent's image) */
    struct ospd_escaped *escaped; /* processes that ran unprofiled (OSP_REC_ESCAPED) */
    uint32_t escaped_count, escaped_cap;
    uint32_t rate_hz;
    uint64_t start_unix_ns, start_mono_ns;
    char platform[OSP_PLATFORM_SIZE]; /* NUL-terminated */
    char *exe_fallback; /* exe when no image is flagged main (e.g. /proc/<pid>/exe), or NULL */
    char *comm;         /* the process's name as the kernel gives it (/proc/<pid>/comm), or NULL */

    struct ospd_thread *threads;
    uint32_t thread_count, threads_cap;
    struct ospd_slot *slots; /* indexed by slot number */
    uint32_t slots_cap;
    struct ospd_image *images;
    uint32_t image_count, images_cap;
    struct ospd_interner stacks;
    struct ospd_sample *samples; /* the latest, after the `spilled` ones in the spill file */
    uint64_t sample_count, samples_cap;
    /* The spill file (spill.c): samples written to disk, as the raw file's rows, as batches
     * of spill_batch fill, in the order they came. spill_batch 0: every sample stays in
     * memory (tests, the stream). */
    char *spill_path;     /* the output path, whose directory holds the file */
    uint32_t spill_batch; /* samples in memory before they go to the file; 0 = never */
    int spill_fd;         /* its descriptor + 1; 0 (a zeroed collector) = not opened yet */
    uint64_t spilled;     /* samples in the file */
    uint64_t spill_bytes; /* its size */

    /* Counters. */
    uint64_t memory_limit; /* bytes for samples and stacks; ospd_collector_init sets the default */
    uint64_t lost;         /* samples the daemon could not keep (memory, limits) */
    uint64_t orphan_repeats; /* REPEATs for a slot with no earlier sample (also in lost) */
    uint64_t unknown_thread; /* samples naming no live registration (also in lost) */
    uint64_t memory_lost;    /* samples lost to the memory budget or limits (also in lost) */
    uint64_t ring_full;      /* of shim_dropped: samples lost to a full ring in the target */
    uint64_t process_cpu_ns; /* the target's CPU time at its end, 0 when unknown */

    /* Parsing a slot's ring (ospd_parse_slot): a sample of a registration not known yet
     * (its THREAD_START is still in the event ring) ends the parse instead of being lost. */
    bool slot_mode;
    bool deferred;
    /* Called when a THREAD_END record is parsed, before anything after it: ospreyd reads the
     * slot's ring up to here and acknowledges the end. NULL in tests. */
    void (*on_thread_end)(void *ctx, uint32_t slot, uint32_t generation);
    void *ctx;
    uint64_t shim_dropped; /* header.dropped, or the exit record's count */
    uint64_t records;      /* records parsed */

    /* Ring position and end of stream. */
    uint64_t last_head; /* highest head seen, to check that head only moves forward */
    bool exit_seen;
    uint64_t end_unix_ns; /* from the exit record, else set when the end is noticed */
    enum ospd_exit_status exit_status;
    uint64_t sandboxed_rel_ns;   /* 0, or when the program entered a seccomp sandbox (from start) */
    int exit_signal;             /* with OSPD_EXIT_KILLED */
    int exit_code;               /* -1 unknown; else the code of a normal exit seen in /proc */
    char error[OSPD_ERROR_SIZE]; /* why the ring was rejected */

    /* ospreyd's own cost, written as "collector" when peak_rss_kb > 0 (ospreyd sets both
     * from getrusage just before writing; tests leave them 0 and get no such field). */
    uint64_t peak_rss_kb;
    uint64_t cpu_ms;
    /* The unwind tables ospreyd built (unwind-source.c), written in "collector" too: images
     * with rows, images it could not read, images whose rows came from the cache, rows, bytes
     * of shared memory they take, and the
     * longest time from an image's discovery to its rows being published; and when, on the
     * samples' axis, every object mapped at attach had its rows (0: never). */
    uint32_t unwind_images, unwind_failed, unwind_cached;
    uint64_t unwind_rows, unwind_bytes, unwind_longest_ms, unwind_ready_ns;
    /* How well ospreyd kept up, in "collector" too: the latest its tick came after its
     * deadline, and the longest read of the rings. */
    uint64_t longest_late_us, longest_read_us;
    /* Attached (perf events): the CPU time the kernel's cpu-clock events counted, in
     * "collector" too when not 0 (the samples should add up to it, a period each). */
    uint64_t events_cpu_ns;
    /* Attached by ptrace (perf events refused): its rounds, the threads it stopped for a
     * sample and their time stopped in all; "collector"'s "ptrace" when rounds is not 0. */
    uint64_t ptrace_rounds, ptrace_stops, ptrace_stopped_ns;
    struct ospd_waits waits;
    /* Code no object holds, named by the process's JIT maps when the profile is written
     * (jit-map.c): the symbols a sampled pc falls in, by start, and the maps read. */
    struct ospd_jit_symbol *jit;
    uint32_t jit_count, jit_map_count, jit_note_count;
    char *jit_maps[OSPD_JIT_MAPS];
    char *jit_notes[OSPD_JIT_MAPS]; /* a map refused or cut short, one sentence each */
    /* The Python frames' names (python.c): start the pseudo-pc (proto/osp_python.h), size 1,
     * by start. */
    struct ospd_jit_symbol *py; /* name NULL: the code object could not be read */
    uint32_t py_count, py_cap, py_stacks_checked;
    /* The ring's pool of stack copies (NULL: none; a test's memory), its busy bits, and the
     * samples held with their copies (copies.c). */
    const uint8_t *copy_pool;
    uint32_t copy_count, copy_size;
    _Atomic uint64_t *copies_busy;
    struct ospd_copies copies;
};

/* copies.c. Hold the sample `sample` (an index as ospd_held_copy's) with its STACK_COPY
 * record r, its pcs and the copy's bytes[0..len) (copied here). Over OSPD_COPIES_MAX_BYTES
 * the oldest held are walked first with the rows there are. 0, or -ENOMEM (the sample keeps
 * the handler's stack). */
int ospd_copies_hold(struct ospd_collector *c, uint64_t sample, const struct osp_rec_stack_copy *r,
                     const uint64_t *pcs, const uint8_t *bytes, uint32_t len);
/* Walk the held copies with the table object [tables, +size) when it has new rows: each whose
 * walk meets no code whose rows are still being built (every one once no build is pending, or
 * `all`: the profile ends) lets go of its copy, its sample's stack becoming pcs[0..resume)
 * and the copy's walk from there, with that walk's stop reason. Returns the copies let go. */
uint32_t ospd_copies_walk(struct ospd_collector *c, const void *tables, uint64_t tables_size,
                          bool all);
void ospd_copies_free(struct ospd_copies *h);
/* collect.c: sample `sample` (an index as ospd_held_copy's) takes the stack pcs[0..depth)
 * ending for reason `stop`. 0; -ENOENT when it is no longer in memory (spilled), or the stack
 * cannot be kept. */
int ospd_collector_restack(struct ospd_collector *c, uint64_t sample, const uint64_t *pcs,
                           uint32_t depth, uint32_t stop);

/* switch-refused.c: the shim of process pid could not open the switch records (perf_event_open
 * gave it err, positive): w's refused_* say what refused them, from /proc as it is now. */
void ospd_switches_refused(struct ospd_waits *w, int32_t pid, int32_t err);
/* What refused them, from err, kernel.perf_event_paranoid (INT32_MIN: unknown), the process's
 * Seccomp mode (2: a filter; -1 unknown) and effective capabilities (CapEff; -1 unknown):
 * "perf_event_paranoid" (above 2, without CAP_PERFMON or CAP_SYS_ADMIN), "seccomp" (EACCES or
 * EPERM under a filter where the setting allows them), else "kernel". */
const char *ospd_refused_by(int32_t err, int32_t paranoid, int64_t seccomp, int64_t caps);

/* waits.c. A context switch of thread `tid` of the target at t_ns (CLOCK_MONOTONIC): out
 * (blocked, or preempted) or in. Records of one thread must come in time order. */
void ospd_waits_switch(struct ospd_collector *c, int32_t tid, uint64_t t_ns, bool out,
                       bool preempted);
/* The shim's site of a wait (OSP_REC_WAIT_SPAN) of collector thread `thread`. */
void ospd_waits_span(struct ospd_collector *c, uint32_t thread, uint64_t start_ns, uint64_t end_ns,
                     uint32_t flags, uint32_t stack);
/* A thread registered (its index in c->threads): its tid now names it. */
void ospd_waits_thread_started(struct ospd_collector *c, uint32_t thread);
/* Its registration ended (it is leaving): a block it is in now is its exit, not a wait. */
void ospd_waits_thread_ended(struct ospd_collector *c, uint32_t thread);
/* Give the blocks whose site is known (or which have waited long enough for one) their
 * WAITING samples; `final` gives every block one, the open ones ending at now_ns. */
void ospd_waits_resolve(struct ospd_collector *c, uint64_t now_ns, bool final);
/* The profile is over at now_ns: every block resolved, final, none past the program's exit
 * record when there is one (its end_unix_ns, on the monotonic clock by the start's pair). */
void ospd_waits_finish(struct ospd_collector *c, uint64_t now_ns);
/* Whether the waits want the rings read soon: a thread's blocks wait for the shim's spans or
 * for their wake-up to be decided, or a thread is blocked with no capture of the shim's in its
 * block and was not asked yet (ospd_waits_to_ask will ask it). The collector's tick does not
 * nap meanwhile. */
bool ospd_waits_asking_soon(const struct ospd_collector *c);
/* Threads blocked since before now_ns - min_ns with no capture of the shim's in that block
 * and not yet asked: calls ask(ctx, thread) for each and marks it asked. */
void ospd_waits_to_ask(struct ospd_collector *c, uint64_t now_ns, uint64_t min_ns,
                       void (*ask)(void *ctx, uint32_t thread), void *ctx);
void ospd_waits_free(struct ospd_waits *w);
/* Used by collect.c and waits.c: append one sample. */
void ospd_collect_add(struct ospd_collector *c, uint64_t t_ns, uint32_t thread, uint32_t stack,
                      uint32_t state, uint32_t weight);

void ospd_collector_init(struct ospd_collector *c);
void ospd_collector_free(struct ospd_collector *c);
/* Copy the identity fields from a ring header the caller has validated. */
void ospd_collector_set_identity(struct ospd_collector *c, const struct osp_ring_header *h);

/* Feeding the collector, whatever the source (the shim's rings through ospd_parse, or the
 * kernel's perf events of a process attached to, perf-source.c): who the target is, its
 * threads, its images, its samples. The raw writer turns the result into the raw file. */
void ospd_collector_identity(struct ospd_collector *c, int32_t pid, uint32_t rate_hz,
                             uint64_t start_unix_ns, uint64_t start_mono_ns,
                             const char platform[OSP_PLATFORM_SIZE]);
/* A thread registered in `slot` (its generation there): takes `label` (valid UTF-8, malloc'd;
 * freed on failure). Returns its index in c->threads, or a negative errno. */
int64_t ospd_collector_thread(struct ospd_collector *c, uint32_t slot, uint32_t generation,
                              int64_t fiber, int32_t tid, char *label);
/* An image (the fields of struct ospd_image): takes `path` (valid UTF-8, malloc'd). One with
 * the same base and path as a known one still mapped only adds its main flag. 0 or -ENOMEM. */
int ospd_collector_image(struct ospd_collector *c, uint64_t base, uint64_t slide, uint64_t text,
                         uint64_t text_size, char *path, const char *arch, bool main);
/* The image still mapped at `base` from `path` (the latest one), or NULL. */
struct ospd_image *ospd_collector_mapped_image(struct ospd_collector *c, uint64_t base,
                                               const char *path);
/* A process that ran unprofiled (pid, why: enum osp_escape or OSPD_ESCAPE_OTHER_USER): takes
 * `path` (its executable, valid UTF-8, malloc'd; freed when not kept). Later than
 * OSPD_MAX_ESCAPED, or out of memory, it is left out. */
void ospd_collector_escaped(struct ospd_collector *c, int32_t pid, uint32_t reason, char *path);
/* An on-CPU or waiting sample of collector thread `thread` standing for `weight` periods,
 * its stack pcs[0..depth) leaf first (depth <= OSP_MAX_DEPTH; kernel frames, at or above
 * OSPD_KERNEL_PC, first). Returns the stack's index, or a negative errno (the sample is
 * counted as lost). */
int64_t ospd_collector_sample(struct ospd_collector *c, uint64_t t_ns, uint32_t thread,
                              const uint64_t *pcs, uint32_t depth, uint32_t state, uint32_t weight);

/* Check a ring header before anything else is read through it. `object_size` is the size of
 * the shared-memory object. Returns 0, or -EPROTO with a one-line reason in err. */
int ospd_ring_validate(const struct osp_ring_header *h, uint64_t object_size, char *err,
                       size_t err_size);

/* The event-ring reader, whoever consumes it: walks the records in data[tail .. head) (free-
 * running byte counters; data_size a power of two), checking each record's framing (size >= 8,
 * a multiple of 8, inside the data area, not past head, no larger than any valid record), and
 * calls `visit` once per record, PAD records included, on a copy of its `size` bytes made
 * before anything in it is read (the writer may change the ring under us). `pos` is the
 * record's counter. `visit` returns 0 (consumed, go on), OSPD_VISIT_STOP (consumed, stop
 * there: the exit record), OSPD_VISIT_AGAIN (not consumed, stop: read it again next time) or
 * a negative errno (not consumed, stop, returned as it is).
 *
 * Returns 0, visit's negative value, or -EPROTO when the framing broke the protocol with one
 * line in error[error_size] (unless it already held one). *new_tail is the counter after the
 * last record consumed. */
#define OSPD_VISIT_STOP  1
#define OSPD_VISIT_AGAIN 2
typedef int (*ospd_record_visitor)(void *ctx, uint64_t pos, const uint8_t *rec, uint32_t type,
                                   uint32_t size);
int ospd_ring_walk(const uint8_t *data, uint64_t data_size, uint64_t tail, uint64_t head,
                   ospd_record_visitor visit, void *ctx, char *error, size_t error_size,
                   uint64_t *new_tail);

/* Parse the records in data[tail .. head) (free-running byte counters, the byte at counter
 * x lives at data[x & (data_size - 1)]) into the collector, stopping after an EXIT record.
 * data_size must be a power of two (ospd_ring_validate checked it). The bytes may be shared
 * with a hostile writer: each record is copied out before it is checked and used.
 *
 * Returns 0 with *new_tail the counter after the last record consumed (store it as the
 * ring's tail), or -EPROTO when the ring broke the protocol: c->error says what, *new_tail
 * is where parsing stopped, and the records before it are kept. */
int ospd_parse(struct ospd_collector *c, const uint8_t *data, uint64_t data_size, uint64_t tail,
               uint64_t head, uint64_t *new_tail);

/* Parse one slot's sample ring (same record format): stops early, without an error, at a
 * sample whose registration has not been seen yet. */
int ospd_parse_slot(struct ospd_collector *c, const uint8_t *data, uint64_t data_size,
                    uint64_t tail, uint64_t head, uint64_t *new_tail);

/* ------------------------------------------------------------------------------------------ */
/* Samples spilled to disk (spill.c). */

/* Samples a collector keeps in memory before it writes them to its spill file (192 KiB, and
 * a few milliseconds of formatting at most); OSPREYD_SPILL_SAMPLES in ospreyd's environment
 * sets another count (tests: a tiny one). */
#define OSPD_SPILL_BATCH (1u << 13)
/* The batch: OSPREYD_SPILL_SAMPLES when it is a count from 1 to OSPD_SPILL_BATCH, else that. */
uint32_t ospd_spill_batch(void);
/* Spill this collector's samples, `batch` at a time, to a file with no name in the directory
 * of out_path (opened when the first batch is full). 0 or -ENOMEM. */
int ospd_spill_enable(struct ospd_collector *c, const char *out_path, uint32_t batch);
/* Write the samples in memory to the spill file and empty the table (add_sample calls it when
 * a batch is full). 0, or a negative errno after one line on stderr: spilling stops there,
 * the samples stay in memory. */
int ospd_spill_flush(struct ospd_collector *c);
/* Copy the spilled rows to f, as the raw file's "samples" rows from the first on (the file
 * is fflushed first, its position moved past them after). 0 or a negative errno. */
int ospd_spill_copy(const struct ospd_collector *c, FILE *f);
void ospd_spill_free(struct ospd_collector *c);
/* Samples collected and kept: spilled plus in memory. */
uint64_t ospd_sample_total(const struct ospd_collector *c);

/* One row of the raw file's "samples" into row (at least OSPD_SAMPLE_ROW_MAX bytes): "\n[...]"
 * after a comma unless it is the first. Returns its length (raw-write.c). */
#define OSPD_SAMPLE_ROW_MAX (5 * 21 + 8)
size_t ospd_sample_row(char *row, const struct ospd_sample *s, bool first);

/* Total samples lost: those counted by the shim plus those the daemon could not keep. */
uint64_t ospd_dropped_total(const struct ospd_collector *c);

/* Copy `len` bytes into a new NUL-terminated string that is valid UTF-8: every byte that is
 * not part of a well-formed sequence (and every NUL) becomes U+FFFD. NULL when out of memory. */
char *ospd_utf8_sanitize(const char *bytes, size_t len);

/* ------------------------------------------------------------------------------------------ */
/* The numbers /proc gives (proc-view.c): the same as the collector's pid namespace's unless
 * its /proc is another namespace's (`unshare --pid --fork` without `--mount-proc`). */

/* Whether /proc/self names getpid(): this /proc is our pid namespace's. Read once. */
bool ospd_proc_ours(void);
/* The number /proc gives process `pid` (a pid of our namespace): `pid` itself where /proc is
 * ours; else read from a pidfd's fdinfo. 0 when this /proc does not show the process; -1 when
 * it has ended or cannot be opened (no pidfd). */
int32_t ospd_proc_pid(int32_t pid);
/* The number /proc/<proc_pid>/task/ gives thread `tid` (an id of our namespace) of process
 * proc_pid, or 0 when not found. */
int32_t ospd_proc_tid(int32_t proc_pid, int32_t tid);
/* The last number of the `NSpid:` line of a /proc/.../status file (the process's or thread's
 * id in its own pid namespace), or 0. */
int32_t ospd_proc_innermost_id(const char *status);
/* One line on stderr when c's process is there but /proc does not show it (c->proc_pid 0
 * while this /proc is another namespace's); nothing otherwise. */
void ospd_proc_unseen(const struct ospd_collector *c);

/* ------------------------------------------------------------------------------------------ */
/* Names for code no object holds (jit-map.c). */

/* While the process is there: its executable mappings of files no image covers become images
 * (ospd_maps_code), then its JIT maps (/tmp/perf-PID.map, the jitdumps it maps) name the pcs
 * still in no image; the symbols that hold one are kept in c->jit. Touches the system. */
void ospd_code_names(struct ospd_collector *c);
/* The steps, for the tests: begin collects the pcs in no image of c's stacks; each map's
 * contents are offered (a perf map's text, a jitdump's bytes; -EINVAL: not a jitdump); keep
 * moves the symbols that hold a pc into c->jit; end frees the reader. 0 or a negative errno. */
struct ospd_jit_reader {
    struct ospd_jit_wanted *wanted;
    uint64_t skipped; /* lines or records that did not parse */
};
int ospd_jit_begin(const struct ospd_collector *c, struct ospd_jit_reader *r);
int ospd_jit_perf_map(struct ospd_jit_reader *r, const char *text, size_t size);
int ospd_jit_dump(struct ospd_jit_reader *r, const uint8_t *data, size_t size);
int ospd_jit_keep(struct ospd_collector *c, struct ospd_jit_reader *r);
void ospd_jit_end(struct ospd_jit_reader *r);

/* Names for the Python frames of the stacks interned since the last call (python.c), read
 * from process c->pid's memory into c->py. Touches the process. */
void ospd_python_names(struct ospd_collector *c);
/* The line of code unit `index` in CPython 3.11's location table t[0..n), starting from the
 * function's first line `line`. */
int ospd_python_line(const uint8_t *t, size_t n, uint64_t index, int line);

/* ------------------------------------------------------------------------------------------ */
/* The sampling tick (tick.c). */

/* One round: the watch list takes the slots the shim asked to be looked at, then
 * tick_seq + 1. Returns how many watched slots say RUNNING. */
uint32_t ospd_tick_round(struct osp_ring_header *h, uint8_t *slots, uint32_t slot_count,
                         uint32_t slot_ring_size, uint64_t *watch);
/* The caller's watch list (OSP_ATTENTION_WORDS words): add the slots the shim asked to be
 * looked at (ospd_tick_round does it first); drop those neither running nor holding
 * samples (after they were drained). */
void ospd_watch_take(struct osp_ring_header *h, uint64_t *watch);
void ospd_watch_settle(uint8_t *slots, uint32_t slot_ring_size, uint64_t *watch);
/* Say the collector naps (header.napping, proto/osp_ring.h "Waking the collector"), then
 * look at the fills once more: false (and awake again) when the event ring or a slot on the
 * watch list is half full already, or a wake failed once (OSP_NAP_REFUSED). */
bool ospd_nap_begin(struct osp_ring_header *h, uint64_t data_size, uint8_t *slots,
                    uint32_t slot_count, uint32_t slot_ring_size, uint64_t *watch);
/* Awake: no producer need wake us (from OSP_NAPPING only). */
void ospd_nap_end(struct osp_ring_header *h);

/* ------------------------------------------------------------------------------------------ */
/* Raw profile writer (raw-write.c). */

/* Write the collector as a version 1 raw profile to `path`, atomically: a temp file in the
 * same directory, fsync, rename. Returns 0, or a negative errno with one line in err naming
 * the path; no temp file is left behind either way. */
int ospd_raw_write(const struct ospd_collector *c, const char *path, char *err, size_t err_size);
/* The same, visible at once and durable right after: renamed into place, its fsync (file and
 * directory) left to ospc_atomic_sync(pending) once the writer has told whoever waits. */
struct ospc_atomic;
int ospd_raw_publish(const struct ospd_collector *c, const char *path, struct ospc_atomic *pending,
                     char *err, size_t err_size);

#endif /* OSPD_H */
