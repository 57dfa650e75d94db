/* osp_ring.h — the shared-memory ABI between the shim (in the target) and ospreyd.
 *
 * One shared-memory object per profiled process: a memfd the shim creates (close-on-exec,
 * named "osprey-<pid>-<64 random bits hex>" so that it can be told in /proc/PID/maps; nothing
 * in /dev/shm, so nothing is ever left behind and a small /dev/shm is no limit), sized
 * OSP_RING_HEADER_SIZE + data_size, and hands to ospreyd as its fd 3 (`--ring-fd 3
 * --ring-name NAME`). ospreyd maps it and checks the header; from then on the mappings and
 * ospreyd's descriptor keep it alive.
 *
 * Layout (like perf_event_mmap_page: version and sizes first, reserved space for growth):
 *
 *   offset 0                     struct osp_ring_header (OSP_RING_HEADER_SIZE bytes)
 *   offset header.data_offset    data area, header.data_size bytes, a power of two
 *
 * One single-producer/single-consumer event ring lives in the data area.
 * Producer: the shim's sampler thread (never the signal handler). Consumer: ospreyd.
 *
 *   producer (sampler)                          consumer (ospreyd)
 *   ------------------                          ------------------
 *   t = load(tail, acquire)          (A) <----  store(tail, release)     (D)
 *   write record bytes at head
 *   store(head, head + n, release)   (B) ---->  h = load(head, acquire)  (C)
 *                                               read record bytes below h
 *
 *   (A) pairs with (D): the producer never overwrites bytes the consumer is still reading.
 *   (B) pairs with (C): the consumer never reads bytes before the producer has written them.
 *
 * head and tail are free-running 64-bit byte counters; the byte at counter c lives at
 * data[c & (data_size - 1)]. Only osp_ring_load_head/tail and osp_ring_store_head/tail below
 * touch them.
 *
 * Records are 8-byte aligned and never wrap: a record that would cross the end of the data
 * area is preceded by an OSP_REC_PAD record that fills the rest of it (the header of a pad
 * always fits, since everything is 8-byte aligned). Every record starts with
 * struct osp_rec_header; `size` is the whole record including that header, a multiple of 8.
 *
 * The consumer treats everything in this mapping as untrusted: every size, length, depth,
 * index and counter is bounds-checked before use, and a violation rejects the ring with a
 * message; it never crashes the daemon or makes it read or write out of bounds.
 */
#ifndef OSP_RING_H
#define OSP_RING_H

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define OSP_RING_MAGIC             UINT64_C(0x31474e495250534f) /* "OSPRING1" as little-endian bytes */
#define OSP_RING_ABI_VERSION       1u
#define OSP_RING_HEADER_SIZE       4096u
#define OSP_RING_CACHE_LINE        64u
#define OSP_RING_DEFAULT_DATA_SIZE (8u << 20) /* 8 MiB */
#define OSP_RING_MAX_DATA_SIZE     (1u << 30)

#define OSP_MAX_DEPTH       128u  /* frame cap of a sample ([PROF-COLLECT-UNWIND]) */
#define OSP_MAX_LABEL       64u   /* bytes of a thread label, NUL not included */
#define OSP_MAX_PATH        4096u /* bytes of an image path, NUL not included */
#define OSP_ARCH_SIZE       16u   /* arch name field, NUL-padded */
#define OSP_PLATFORM_SIZE   32u   /* platform field, NUL-padded */
#define OSP_ATTENTION_WORDS 64u   /* 64-bit words of the attention bitmap: slot_count <= 4096 */

/* asking: written by ospreyd only. 0: it does not say (the shim counts rounds). */
enum osp_asking {
    OSP_ASKING_IDLE = 1, /* no signal of ours is being sent */
    OSP_ASKING = 2,      /* a round of signals may be under way */
};

/* shim_state: written by the shim only. */
enum osp_shim_state {
    OSP_SHIM_RUNNING = 1, /* sampling; records keep coming */
    OSP_SHIM_EXITED = 2,  /* the exit record has been published; nothing follows */
};

/* daemon_state: written by ospreyd only (0 until it attaches). */
enum osp_daemon_state {
    OSP_DAEMON_NONE = 0,
    OSP_DAEMON_ATTACHED = 1, /* mapped, header checked, name unlinked */
    OSP_DAEMON_DONE = 2,     /* raw file written and renamed into place */
    OSP_DAEMON_FAILED = 3,   /* gave up; daemon_error holds one line saying why */
};

struct osp_ring_header {
    /* --- identity and sizes: written once by the shim before ospreyd is started --- */
    uint64_t magic;         /* OSP_RING_MAGIC */
    uint32_t abi_version;   /* OSP_RING_ABI_VERSION */
    uint32_t header_size;   /* OSP_RING_HEADER_SIZE */
    uint64_t data_offset;   /* == OSP_RING_HEADER_SIZE */
    uint64_t data_size;     /* power of two, <= OSP_RING_MAX_DATA_SIZE */
    int32_t pid;            /* target process id */
    uint32_t rate_hz;       /* requested per-thread sampling rate after clamping */
    uint64_t start_unix_ns; /* CLOCK_REALTIME at activation */
    uint64_t start_mono_ns; /* CLOCK_MONOTONIC at activation; sample t_ns are on this clock */
    char platform[OSP_PLATFORM_SIZE]; /* e.g. "linux-x86_64", NUL-padded */
    /* The slot table (see "Slots" below); slot_count 0 means none (no sampling requests). */
    uint64_t slots_offset;   /* == data_offset + data_size */
    uint32_t slot_count;     /* slots in the table */
    uint32_t slot_ring_size; /* bytes of each slot's sample ring, a power of two */
    uint64_t signal_cookie;  /* si_value of every SIGPROF of ours (rt_tgsigqueueinfo, SI_QUEUE) */
    /* 0, or the CLOCK_MONOTONIC instant at which the profile ends while the program runs on
     * (OSPREY_PROFILE_SECONDS): ospreyd then pauses our signals, sets `stopped`, and writes
     * the profile (exit status "stopped"). */
    uint64_t stop_at_ns;
    /* The process that started the target (getppid at activation), and OSP_RING_FORKED for
     * a forked child's ring (see "Forked children" below). */
    int32_t parent_pid;
    uint32_t ring_flags;

    /* --- state words (cache line 2) --- */
    alignas(OSP_RING_CACHE_LINE) _Atomic uint32_t shim_state; /* enum osp_shim_state; the
        store of OSP_SHIM_EXITED is release, after the exit record's head store; ospreyd
        loads it acquire. */
    _Atomic uint32_t daemon_state;    /* enum osp_daemon_state; ospreyd stores release after
          the file is renamed (DONE) or daemon_error is written (FAILED); the shim loads acquire. */
    _Atomic int32_t daemon_pid;       /* written by ospreyd at each attach (release, after
          daemon_started and daemon_pid_ns); the shim's exit looks at that process */
    _Atomic uint32_t stopped;         /* ospreyd: 1 once it ended the profile at stop_at_ns
          (release, before DONE): the handler returns at once, exit waits for nothing */
    _Atomic uint64_t dropped;         /* samples lost inside the target (per-thread ring full,
          event ring full, interning/allocation failure). Written by the shim's threads
          (relaxed increments); ospreyd reads it relaxed after acquiring shim_state or after the
          target has died: a count, not a synchronisation point. */
    _Atomic uint64_t kernel_waits_ns; /* ospreyd: 0, or the CLOCK_MONOTONIC instant at which it
       mapped the context-switch records' rings the shim handed it (see "Waits from the
       kernel" below); the shim, which mapped them at boot so that no record is lost, unmaps
       its own once it reads nonzero here. Stored release; the shim loads it acquire. A shim
       that handed the rings on writes every wait as an OSP_REC_WAIT_SPAN (its site) from the
       start of the run, and ospreyd times every block of the records. */
    char daemon_error[256];           /* ospreyd: one NUL-terminated line, valid when FAILED */

    /* --- producer index: its own cache line --- */
    alignas(OSP_RING_CACHE_LINE) _Atomic uint64_t head; /* written by the shim: (B) */
    /* --- consumer index: its own cache line --- */
    alignas(OSP_RING_CACHE_LINE) _Atomic uint64_t tail; /* written by ospreyd: (D) */
    /* Shim: OSP_REC_ESCAPED records written (relaxed increments): a forked child that
     * recorded no sample but named a process that escaped still has something to say. */
    alignas(OSP_RING_CACHE_LINE) _Atomic uint32_t escapes;
    /* Shim, at start: 0, or the errno perf_event_open gave for the context-switch records
     * (EACCES where perf_event_paranoid or a seccomp filter refuses them): the shim times
     * waits itself, and the profile says why (raw `waits.refused`). Zero in older shims. */
    int32_t switches_refused;
    /* ospreyd, at attach (release, before ATTACHED): the records beyond the first ABI's it
     * reads (OSP_READER_*). The shim writes such a record only to a reader that says so (an
     * acquire load): an older ospreyd, which rejects a record type it does not know, reads
     * 0 and gets the rings it always had. Zero in the rings of older shims' too. */
    _Atomic uint32_t reader_features;
    /* ospreyd (enum osp_napping): OSP_NAPPING while it sleeps until a producer wakes it (a
     * ring with OSP_RING_WAKES; "Waking the collector" below), else OSP_AWAKE; the shim stores
     * OSP_NAP_REFUSED once a wake could not be sent (ospreyd then reads on its tick). Zero
     * (awake) in older collectors' rings. */
    _Atomic uint32_t napping;
    /* Shim: 0, or the CLOCK_MONOTONIC instant at which the program entered a seccomp sandbox
     * and sampling stopped for good (stored release before the sandbox takes effect; ospreyd
     * loads it acquire as it finishes): the raw `exit.sampling_ended`. Zero in older shims. */
    _Atomic uint64_t sandboxed_ns;
    /* ospreyd, at each attach, before daemon_pid (which it stores release): who the collector
     * is, so that the shim can tell it from a process that took its pid since (shim/README.md,
     * "The exit's wait for its collector"): its start time as /proc/PID/stat's field 22 gives
     * it (clock ticks since boot), and the inode of its pid namespace (/proc/self/ns/pid), in
     * which daemon_pid is a pid. 0 where /proc did not say. The shim loads daemon_pid acquire,
     * then these (relaxed), then daemon_pid again: a collector that attached meanwhile makes
     * it look again. Zero in older collectors' rings: the shim then goes by the pid alone. */
    _Atomic uint64_t daemon_started;
    _Atomic uint64_t daemon_pid_ns;
    uint8_t reserved2[OSP_RING_CACHE_LINE - 40];

    /* --- sampling control (cache line 7) --- */
    /* Nonzero while nobody may send the target a SIGPROF of ours: a thread is inside execve
     * (a pending one would kill the new image) or the program uses SIGPROF itself. Written
     * by the shim (seq_cst increments and stores); ospreyd loads it (seq_cst) before each
     * round of signals, having stored `asking` OSP_ASKING (seq_cst), and stores `asking`
     * OSP_ASKING_IDLE (release) once the round's signals are sent. A shim that raised it then
     * loads `asking` (seq_cst): IDLE, and every later round sees the pause (one of the two
     * seq_cst loads sees the other side's store, as in Dekker's), every earlier one is over;
     * OSP_ASKING, it waits for IDLE. Where `asking` is 0 (a collector that does not write
     * it), it waits for tick_seq to move twice instead: ospreyd stores it release after each
     * round, so no round that could have missed the pause is still under way. */
    alignas(OSP_RING_CACHE_LINE) _Atomic uint32_t signals_paused;
    _Atomic uint32_t slot_high_water; /* shim: slots in use are below this (release) */
    _Atomic uint64_t tick_seq;        /* ospreyd: rounds of signals done (release) */
    _Atomic uint64_t signals_sent;    /* ospreyd: SIGPROFs sent (relaxed, informational) */
    _Atomic uint64_t
        ring_full_drops; /* shim: samples lost to a full ring (relaxed; also in dropped) */
    /* ospreyd: samples it could not keep, stored before DONE (relaxed: the release store of
     * DONE orders it for a shim that acquires DONE). */
    _Atomic uint64_t daemon_dropped;
    /* ospreyd: 1 when it wrote the profile beside the asked-for path (osp_per_pid_path), which
     * another profiled process had just written; stored before DONE (same ordering). */
    _Atomic uint32_t wrote_beside;
    /* ospreyd: enum osp_asking, whether a round of its signals may be under way (see
     * signals_paused); OSP_ASKING_IDLE from before ATTACHED on. */
    _Atomic uint32_t asking;
    /* Slots ospreyd should look at (bit i of word i / 64): set by the shim (release) when a
     * thread is registered or found running again; ospreyd takes the words (exchange to 0,
     * acquire) each tick into a watch list of its own and drops a slot from it once it is
     * neither running nor holding samples. So a tick costs ospreyd the running threads, not
     * the registered ones: a thousand sleeping threads are never looked at. */
    alignas(OSP_RING_CACHE_LINE) _Atomic uint64_t attention[OSP_ATTENTION_WORDS];

    /* --- stack copies (see "Stack copies" below): 0 in a shim that takes none --- */
    alignas(OSP_RING_CACHE_LINE) uint64_t copies_offset; /* the pool: after the slot table */
    uint32_t copy_count;                                 /* buffers, <= OSP_COPY_MAX_COUNT */
    uint32_t copy_size;                                  /* bytes each, <= OSP_COPY_MAX_SIZE */
    /* Bit i: buffer i holds a copy ospreyd has not read yet. Set by the handler that took it
     * (compare-exchange, acquire: the bytes ospreyd read before it cleared the bit are read);
     * cleared by ospreyd (fetch_and, release) once it has copied the bytes out, or by the
     * handler when its record found no room. */
    _Atomic uint64_t copies_busy;
    /* Shim: samples whose stack could not be copied (every buffer busy, or no room for the
     * record): they carry the handler's frame-pointer guess (relaxed increments). */
    _Atomic uint64_t copies_refused;
    /* ospreyd: 1 once it reads STACK_COPY records and frees the pool's buffers (stored release
     * at attach, before ATTACHED); the handler takes copies before any collector attached, and
     * after only when this says so (acquire): a collector that does not know the record is sent
     * at most those its ring already held, and no more once attached. */
    _Atomic uint32_t copies_read;
};

_Static_assert(sizeof(struct osp_ring_header) <= OSP_RING_HEADER_SIZE, "header fits its page");
_Static_assert(offsetof(struct osp_ring_header, magic) == 0, "magic first");
_Static_assert(offsetof(struct osp_ring_header, abi_version) == 8, "ABI version second");
_Static_assert(offsetof(struct osp_ring_header, shim_state) == 128, "state words on line 2");
_Static_assert(offsetof(struct osp_ring_header, head) % OSP_RING_CACHE_LINE == 0, "head alone");
_Static_assert(offsetof(struct osp_ring_header, slots_offset) == 88, "slot table fields");
_Static_assert(offsetof(struct osp_ring_header, ring_flags) == 124, "identity fills line 1");
_Static_assert(offsetof(struct osp_ring_header, tail) - offsetof(struct osp_ring_header, head) >=
                   OSP_RING_CACHE_LINE,
               "head and tail on separate cache lines");

/* Record types. */
enum osp_rec_type {
    OSP_REC_PAD = 0,             /* filler up to the end of the data area; skip `size` bytes */
    OSP_REC_THREAD_START = 1,    /* struct osp_rec_thread_start + label bytes */
    OSP_REC_THREAD_END = 2,      /* struct osp_rec_thread_end */
    OSP_REC_SAMPLE = 3,          /* struct osp_rec_sample + depth * uint64_t pcs (leaf first) */
    OSP_REC_REPEAT = 4,          /* struct osp_rec_repeat: reuse the slot's last sample stack */
    OSP_REC_IMAGE = 5,           /* struct osp_rec_image + path bytes */
    OSP_REC_EXIT = 6,            /* struct osp_rec_exit; the last record */
    OSP_REC_SAMPLE_WEIGHTED = 7, /* struct osp_rec_sample_weighted + depth * uint64_t pcs */
    OSP_REC_WAIT_SPAN = 8,       /* struct osp_rec_wait_span + depth * uint64_t pcs */
    OSP_REC_ESCAPED = 9,         /* struct osp_rec_escaped + path bytes */
    OSP_REC_FIBER = 10,          /* struct osp_rec_fiber + label bytes (OSP_READER_FIBERS) */
    OSP_REC_STACK_COPY = 11,     /* struct osp_rec_stack_copy + depth * uint64_t pcs */
};

/* header.reader_features bits. */
#define OSP_READER_FIBERS 1u /* OSP_REC_FIBER records in the slot rings */

struct osp_rec_header {
    uint32_t type; /* enum osp_rec_type */
    uint32_t size; /* whole record in bytes, header included; multiple of 8, >= 8 */
};

/* A registration: (slot, generation) names one thread for its registered lifetime.
 * Slots are reused; generations tell the uses apart. */
struct osp_rec_thread_start {
    struct osp_rec_header h;
    uint32_t slot;
    uint32_t generation;
    int64_t fiber;      /* fiber id; the preload library uses the kernel tid, main is 0 */
    int32_t tid;        /* kernel thread id */
    uint32_t label_len; /* <= OSP_MAX_LABEL; label bytes follow, not NUL-terminated */
    /* char label[label_len]; padding to 8 */
};

struct osp_rec_thread_end {
    struct osp_rec_header h;
    uint32_t slot;
    uint32_t generation;
};

enum osp_thread_state { OSP_STATE_ON_CPU = 0, OSP_STATE_WAITING = 1 };

struct osp_rec_sample {
    struct osp_rec_header h;
    uint64_t t_ns; /* CLOCK_MONOTONIC; minus header.start_mono_ns gives t_rel_ns */
    uint32_t slot;
    uint32_t generation;
    uint32_t state; /* enum osp_thread_state */
    uint32_t depth; /* 1..OSP_MAX_DEPTH */
    /* uint64_t pcs[depth]; leaf first; pcs[0] is the precise pc, the rest return addresses
     * (one of them may be the marker of frames left out: "Frames left out" below) */
};

/* Frames left out. A stack deeper than OSP_MAX_DEPTH frames is walked on to its root (at most
 * OSP_UNWIND_MAX_STEPS frames, proto/osp_unwind_step.h) and recorded as its innermost
 * OSP_MAX_DEPTH - 1 - OSP_UNWIND_OUTER_FRAMES frames, one marker, and its
 * OSP_UNWIND_OUTER_FRAMES outermost frames: the marker is OSP_UNWIND_LEFT_OUT_MARK (bit 61)
 * | the count of frames left out (bits 0..31), an address no code has (osp_unwind_left_out_is).
 * The stop reason is the whole walk's: OSP_UNWIND_OUTERMOST when it reached the root past the
 * marker, OSP_UNWIND_DEPTH when OSP_UNWIND_MAX_STEPS frames did not. */

/* A sample that stands for `weight` sampling periods: ON_CPU, `weight` periods of the
 * thread's CPU time paid at once; WAITING, one wait of `weight` periods starting at t_ns. */
struct osp_rec_sample_weighted {
    struct osp_rec_header h;
    uint64_t t_ns;
    uint32_t slot;
    uint32_t generation;
    uint32_t state;  /* enum osp_thread_state */
    uint32_t depth;  /* 1..OSP_MAX_DEPTH */
    uint32_t weight; /* >= 1 */
    /* Why the stack's walk ended: enum osp_unwind_stop (proto/osp_unwind_step.h), below
     * OSP_UNWIND_STOP_COUNT; 0 when the shim does not say (a wait's stack; this field was
     * reserved, written 0, before). */
    uint32_t stop;
    /* uint64_t pcs[depth]; */
};

struct osp_rec_repeat {
    struct osp_rec_header h;
    uint64_t t_ns;
    uint32_t slot;
    uint32_t generation;
    uint32_t state; /* always OSP_STATE_WAITING today */
    uint32_t reserved;
};

/* Where a thread waited, while ospreyd times its waits from the kernel (kernel_waits_ns):
 * the span [t_ns, end_ns) of CLOCK_MONOTONIC in which the shim knew the thread to be inside
 * the wait whose stack follows. A guarded call's span is the call (OSP_SPAN_GUARDED); a wait
 * the handler found the thread blocked in starts at that instant (OSP_SPAN_CAPTURED_START),
 * and ends at the next running instant or at the next such capture (OSP_SPAN_CAPTURED_END).
 * ospreyd gives each wait the kernel saw the stack of the span that started last among
 * those that overlap it; a capture's own wake-up (the handler ran in the middle of a wait)
 * does not end the wait. */
#define OSP_SPAN_GUARDED        1u
#define OSP_SPAN_CAPTURED_START 2u
#define OSP_SPAN_CAPTURED_END   4u
struct osp_rec_wait_span {
    struct osp_rec_header h;
    uint64_t t_ns;
    uint64_t end_ns;
    uint32_t slot;
    uint32_t generation;
    uint32_t flags; /* OSP_SPAN_* */
    uint32_t depth; /* 1..OSP_MAX_DEPTH */
    /* uint64_t pcs[depth]; */
};

/* In a slot's ring only, written by its thread when the fiber a runtime declared with
 * osp_prof_fiber_switch differs from the one it last wrote there, and only to a reader that
 * set OSP_READER_FIBERS: the samples that follow it in this ring, up to the next such record,
 * ran on fiber `fiber` (label `label`) on the thread of (slot, generation). Fiber 0 with no
 * label: on the thread's own stack again, its samples the registration's. A registration
 * starts on its own stack. An id names one fiber: the shim writes the label with each record,
 * and the last one read is the fiber's. */
struct osp_rec_fiber {
    struct osp_rec_header h;
    uint32_t slot;
    uint32_t generation;
    int64_t fiber;      /* the runtime's id; 0: the thread's own stack */
    uint32_t label_len; /* <= OSP_MAX_LABEL; label bytes follow, not NUL-terminated */
    uint32_t reserved;  /* 0 */
    /* char label[label_len]; padding to 8 */
};

struct osp_rec_image {
    struct osp_rec_header h;
    uint64_t base;            /* ELF load base (address of the ELF header in memory) */
    uint64_t slide;           /* load bias: runtime address minus link-time address */
    uint64_t text;            /* start of the span of PF_X PT_LOAD segments (runtime address) */
    uint64_t text_size;       /* its length in bytes; 0 when unknown */
    char arch[OSP_ARCH_SIZE]; /* ELF machine name ("x86_64", "aarch64"), NUL-padded */
    uint32_t flags;           /* OSP_IMAGE_MAIN for the main executable; OSP_IMAGE_UNLOADED */
    uint32_t path_len;        /* <= OSP_MAX_PATH; path bytes follow, not NUL-terminated */
    /* CLOCK_MONOTONIC ns when the shim saw the object appear (or, with OSP_IMAGE_UNLOADED,
     * saw it gone); 0 for the objects of the first scan (there from the start) */
    uint64_t at_mono_ns;
    /* char path[path_len]; padding to 8 */
};
#define OSP_IMAGE_MAIN 1u
/* The object described (same base and path as an image sent before) is no longer mapped:
 * another may appear at its address. */
#define OSP_IMAGE_UNLOADED 2u

/* A process the target started (posix_spawn) or became (exec) with an environment the
 * profiler cannot follow: it runs unprofiled, and the profile says so. */
struct osp_rec_escaped {
    struct osp_rec_header h;
    int32_t pid;       /* the new process (an exec: the target itself); 0 when unknown */
    uint32_t reason;   /* enum osp_escape */
    uint32_t path_len; /* <= OSP_MAX_PATH; the program's path follows, not NUL-terminated */
    uint32_t reserved;
    /* char path[path_len]; padding to 8 */
};
enum osp_escape {
    OSP_ESCAPE_ENVIRONMENT = 1, /* no OSPREY_PROFILE in its environment (cleared: env -i) */
    OSP_ESCAPE_PRELOAD = 2,     /* OSPREY_PROFILE kept, but not the shim in LD_PRELOAD */
};

/* ---- Stack copies ------------------------------------------------------------------------
 *
 * An on-CPU sample whose walk reached code no published row covers while ospreyd was still
 * building rows (the first second of a big program's first run) cannot be walked whole yet.
 * The handler then copies the stack from the frame it reached (sp up, at most copy_size
 * bytes, without faulting) into a free buffer of the pool (claimed in copies_busy) and writes
 * this record into its slot ring in place of the SAMPLE_WEIGHTED: the sample as the handler
 * walked it (pcs, the frame-pointer guess through that code, stop OSP_UNWIND_GUESSED or what
 * it was), plus where that walk may resume — the frame's registers, its index in pcs and
 * the copy. ospreyd copies the bytes out and frees the buffer at once, keeps the sample with
 * the handler's stack, and once the frame's rows are published (or no build is left) walks
 * the copy from the resume frame by the same step (proto/osp_unwind_step.h) and replaces
 * pcs[resume..] with that walk's frames and its stop reason. A copy of copy_size bytes (its
 * stack goes on above) ospreyd reads on from the live stack as it reads the record, when the
 * copy's last bytes are still the live ones. Copies ospreyd cannot hold
 * (its bound) or whose rows never come keep the handler's stack and stop reason. */
#define OSP_COPY_MAX_COUNT 64u          /* bits of copies_busy */
#define OSP_COPY_MAX_SIZE  (256u << 10) /* a buffer's bytes at most (the shim's: 32 KiB) */
#define OSP_COPY_FIRST     1u /* flags: the resume frame is an interrupted instant (the leaf) */
struct osp_rec_stack_copy {
    /* The sample as a SAMPLE_WEIGHTED record says it (its h.type OSP_REC_STACK_COPY, state
     * OSP_STATE_ON_CPU, stop the handler's walk's); its pcs follow this whole struct. */
    struct osp_rec_sample_weighted sample;
    uint32_t resume;         /* < depth: pcs[resume] is the frame the copy's walk starts at */
    uint32_t flags;          /* OSP_COPY_FIRST */
    uint64_t pc, sp, fp, lr; /* that frame's registers (osp_unwind_regs) */
    uint32_t copy_index;     /* < header.copy_count: the buffer */
    uint32_t copy_len;       /* bytes of it that hold the stack, <= header.copy_size */
    uint64_t copy_base;      /* the stack address of the buffer's first byte (<= sp) */
    /* uint64_t pcs[sample.depth]; */
};

struct osp_rec_exit {
    struct osp_rec_header h;
    uint64_t end_unix_ns; /* CLOCK_REALTIME when the shim stopped sampling */
    uint64_t dropped;     /* final value of header.dropped */
    /* The process's CPU time (CLOCK_PROCESS_CPUTIME_ID) when the record was written, 0 when
     * not read. Added after the first two: a reader takes a record of 24 bytes (without it)
     * as well as of 32. A collector reads the clock itself while the process waits for it;
     * a descendant that does not wait is often gone by then, and this is what is left. */
    uint64_t process_cpu_ns;
};
/* The size of an exit record written before process_cpu_ns. */
#define OSP_REC_EXIT_SIZE_V1 24u

_Static_assert(sizeof(struct osp_rec_header) == 8, "record header");
_Static_assert(sizeof(struct osp_rec_thread_start) % 8 == 0, "aligned");
_Static_assert(sizeof(struct osp_rec_thread_end) % 8 == 0, "aligned");
_Static_assert(sizeof(struct osp_rec_sample) == 32, "sample record");
_Static_assert(sizeof(struct osp_rec_repeat) == 32, "repeat record");
_Static_assert(sizeof(struct osp_rec_sample_weighted) == 40, "weighted sample record");
_Static_assert(sizeof(struct osp_rec_wait_span) == 40, "wait span record");
_Static_assert(sizeof(struct osp_rec_image) % 8 == 0, "aligned");
_Static_assert(sizeof(struct osp_rec_fiber) == 32, "fiber record");
_Static_assert(sizeof(struct osp_rec_exit) == 32, "exit record");
_Static_assert(sizeof(struct osp_rec_stack_copy) == 96, "stack copy record");

/* ---- Slots -------------------------------------------------------------------------------
 *
 * No thread of ours runs inside the program, and no process signals it: each registered
 * thread samples itself, with a timer on CLOCK_MONOTONIC (SIGEV_THREAD_ID, so the kernel
 * interrupts the thread in place on its own CPU) that its SIGPROF handler arms for the thread's
 * next sample, and for a thread with a CPU to itself every period after it, a few samples at a
 * time; and a timer on its own CPU clock that restarts the sampling of a
 * thread that was found blocked once it runs again. Each thread owns one slot: a control
 * block and a sample ring of header.slot_ring_size bytes right after it (the same record
 * format and (A)..(D) orderings as the event ring; producer: that thread alone — its SIGPROF
 * handler, or its own code with SIGPROF blocked; consumer: ospreyd, which reads the rings of
 * the slots on its watch list as often as their fill asks).
 *
 *   thread (handler)                                ospreyd (every tick)
 *   ----------------                                --------------------
 *   store(state, relaxed)                           load(state): keep the slot watched
 *   fetch_or(attention bit, release)  ---------->   exchange(attention word, acquire)
 *
 *   state, next_due_ns, signals_handled and the fields ospreyd once wrote to signal a thread
 *   (signals_sent, last_signal_ns) are advisory: kept for the layout and for a consumer that
 *   signals threads itself (SI_QUEUE with the cookie; the handler takes it like its timer's).
 *
 * A slot is reused only after ospreyd has drained its ring past the thread's end: ospreyd
 * stores drained_generation (release) after it has consumed the THREAD_END record and every
 * sample of that generation; the shim loads it acquire before handing the slot out again.
 */
enum osp_slot_state {
    OSP_SLOT_FREE = 0,    /* no thread */
    OSP_SLOT_RUNNING = 1, /* last seen running: its ring is read every tick */
    OSP_SLOT_BLOCKED = 2, /* found blocked: its CPU-time timer says when it runs again */
    OSP_SLOT_GUARDED = 3, /* inside a blocking call with SIGPROF blocked */
    OSP_SLOT_TIMED = 4,   /* inside a wait timed by its call, SIGPROF deliverable (the shim
                           * times waits): at a --duration stop ospreyd asks it for the wait */
};
#define OSP_SLOT_PROF_BLOCKED 1u /* flags: the program blocked SIGPROF on this thread */

struct osp_slot {
    /* --- written by the thread (registration, handler, guard) --- */
    _Atomic uint32_t generation; /* of the registration using the slot */
    _Atomic uint32_t state;      /* enum osp_slot_state */
    _Atomic int32_t tid;
    _Atomic uint32_t flags;           /* OSP_SLOT_PROF_BLOCKED */
    _Atomic uint64_t next_due_ns;     /* CLOCK_MONOTONIC when a sample will be due */
    _Atomic uint32_t signals_handled; /* (E) */
    uint32_t reserved0;
    /* CLOCK_MONOTONIC of the handler's last blocked instant (relaxed): ospreyd, timing waits
     * from the kernel, asks a thread that has been blocked since before it for the wait's
     * stack (a SIGPROF of ours, SI_QUEUE) and knows the wake-up that follows for the
     * handler's. */
    _Atomic uint64_t capture_ns;
    /* CLOCK_MONOTONIC at the thread's registration (relaxed: stored before its THREAD_START
     * record, whose commit publishes it). The kernel's switch records of its tid from before
     * are not its waits: ospreyd times them from here (for the main thread, the shim's own
     * start came before: ospreyd's spawn, a greeting's answer). 0 from an older shim. */
    _Atomic uint64_t registered_ns;
    /* --- written by ospreyd --- */
    alignas(OSP_RING_CACHE_LINE) _Atomic uint32_t signals_sent;
    _Atomic uint32_t drained_generation;
    _Atomic uint64_t last_signal_ns;
    /* --- the slot ring's indices, as in the header: head by the thread (B), tail by
     * ospreyd (D) --- */
    alignas(OSP_RING_CACHE_LINE) _Atomic uint64_t head;
    alignas(OSP_RING_CACHE_LINE) _Atomic uint64_t tail;
    /* uint8_t ring[slot_ring_size] follows */
};
_Static_assert(sizeof(struct osp_slot) == 4 * OSP_RING_CACHE_LINE, "slot control block");

/* ---- Waits from the kernel --------------------------------------------------------------
 *
 * Where perf_event_open allows it (perf_event_paranoid <= 2 for one's own process), the shim
 * opens at boot, for each CPU, a software dummy event on itself with context_switch, inherit
 * (so every thread it starts is covered), sample_id_all with TID and TIME on CLOCK_MONOTONIC,
 * and remove_on_exec; it hands their descriptors to ospreyd (`--switch-fd N` once a CPU) and
 * closes its own. ospreyd maps each one's ring (1 + OSP_SWITCH_RING_PAGES pages) and reads
 * PERF_RECORD_SWITCH records: a thread switched out (blocked, or preempted:
 * PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) and in, to the nanosecond. Waits are then timed by
 * ospreyd, their sites come from the shim (OSP_REC_WAIT_SPAN), and preempted time is kept
 * apart from CPU time. Without the events (a container or a kernel that forbids them),
 * kernel_waits_ns stays 0 and the shim times waits itself. */
#define OSP_SWITCH_RING_PAGES 64u  /* data pages of each CPU's ring: 256 KiB of 4 KiB pages */
#define OSP_MAX_SWITCH_FDS    256u /* more CPUs than this: no kernel records */

/* ---- Forked children ----------------------------------------------------------------------
 *
 * The child of a profiled process that forks (without exec) is profiled too, as a process of
 * its own with a ring of its own: in the child, before fork returns, the shim makes a ring in
 * a memfd (nothing named, so nothing is left behind however the child ends; sparse: the
 * kernel's internal tmpfs has no size limit, so a page touched later cannot fault with
 * SIGBUS), with parent_pid and OSP_RING_FORKED in its header, opens the child's own
 * context-switch events, and greets its parent's ospreyd: one SOCK_SEQPACKET message,
 * struct osp_fork_hello, on the abstract socket named OSP_FORKS_SOCKET followed by the
 * parent ring's name, carrying (SCM_RIGHTS) the ring's descriptor first, then the events',
 * then the socket its own children will greet, then its own unwind tables (a memfd its
 * collector fills; until then it reads its parent's: the address space is its parent's at
 * the fork). Every profiled image binds and listens on its
 * socket itself, before its collector starts, and hands it on with the ring (`--forks-fd N`):
 * a child forked before the collector is up queues its greeting; nobody else can take the
 * name while the image lives.
 * The child sends only to a listener of its own user (SO_PEERCRED of the connected socket).
 * That ospreyd checks the sender before reading (same user, then SO_PEERCRED pid ==
 * hello.pid; another user's connection is closed unread) and starts a collector for the
 * child (`ospreyd --ring-fd 3 --ring-name NAME --switch-fd 4 ... --forks-fd M --unwind-fd K`,
 * osp_daemon_args.h), which takes the child's own children's greetings in turn. A forked
 * image that recorded no sample (it exec'd or ended at once: a shell's fork before exec)
 * leaves no raw file. A later image (exec'd or spawned: no OSP_RING_FORKED) greets the same
 * way the collector OSPREY_PROFILE_GREET names ("<uid>:<ring>"), and always gets one: that
 * ospreyd follows it itself, as a session of its own in its process (daemon/follow.c), up to
 * a bound beyond which it starts one as for a forked child.
 * The greeting is an exchange of three messages: the greeting; the collector's answer, one
 * byte OSP_FORK_TAKEN, once the greeting is checked and the process set up; the greeter's
 * confirm, one byte OSP_FORK_CONFIRM. The collector follows the process only once it has read
 * the confirm, and drops it on EOF (the greeter closes when no answer came in time) or when
 * the greeter is too slow (shutdown(SHUT_RD) first: a confirm sent after it fails with EPIPE,
 * one sent before it is read); the greeter starts a collector of its own unless its confirm
 * was sent. So a collector that takes no greeting (another version's, or none: a socket whose
 * listener nobody accepts on) costs an image the answer's wait, not its profile. A forked
 * child may read the answer and confirm well after its greeting (within the collector's 1 s
 * for the confirm), or close without confirming: the messages are the same. */
/* A file of this name beside the raw profile (the osprey CLI makes one in its scratch
 * directory) is held with a shared flock by every collector of the run for its life, handed
 * on to the collectors it starts: the CLI's exclusive flock then says every one has ended. */
#define OSP_RUN_LOCK         ".osprey-run.lock"
#define OSP_FORKS_SOCKET     "osprey-forks:"
#define OSP_RING_FORKED      1u          /* ring_flags: the ring of a forked child */
#define OSP_RING_WAKES       2u          /* ring_flags: its producers wake a napping collector */
#define OSP_FORK_HELLO_MAGIC 0x4f535047u /* "OSPG" (below) */
#define OSP_RING_NAME_SIZE   64u         /* bytes of a ring's name, NUL included */
/* The answer and the confirm (above). "OSPF" was a greeting with no answer, followed at once:
 * its collectors refuse an "OSPG" one and close, and the greeter starts its own at once,
 * rather than both following it. */
#define OSP_FORK_TAKEN   'T' /* the collector's answer to a greeting */
#define OSP_FORK_CONFIRM 'C' /* the greeter's to the answer: it starts no collector */

struct osp_fork_hello {
    uint32_t magic;       /* OSP_FORK_HELLO_MAGIC */
    uint32_t abi_version; /* OSP_RING_ABI_VERSION */
    int32_t pid;          /* the child */
    uint32_t switch_fds;  /* descriptors after the ring's: the child's context-switch events */
    uint32_t listener;    /* 1: one more: the socket the child's own children greet */
    uint32_t unwind;      /* 1: one more, last: the child's unwind tables (a memfd) */
    char ring_name[OSP_RING_NAME_SIZE]; /* the child's ring: its own children greet it so */
    char out_path[OSP_MAX_PATH + 1];    /* where the child's raw profile goes, NUL-terminated */
};

#define OSP_SLOT_RING_SIZE 4096u /* default bytes of a slot's ring */
#define OSP_DEFAULT_SLOTS  1024u /* default slots: threads registered at one time */
#define OSP_MAX_SLOT_RING  (1u << 20)

static inline uint64_t osp_slot_stride(uint32_t slot_ring_size)
{
    return sizeof(struct osp_slot) + slot_ring_size;
}

/* Slot i of a table that starts at `table`. */
static inline struct osp_slot *osp_slot_at(uint8_t *table, uint32_t slot_ring_size, uint32_t i)
{
    return (struct osp_slot *)(table + (uint64_t)i * osp_slot_stride(slot_ring_size));
}

/* The slots in use: below the shim's high-water mark, bounded by the table's size. */
static inline uint32_t osp_slots_in_use(struct osp_ring_header *h, uint32_t slot_count)
{
    /* Acquire: pairs with the shim's release after it set a new slot up. */
    uint32_t used = atomic_load_explicit(&h->slot_high_water, memory_order_acquire);
    return used < slot_count ? used : slot_count;
}

/* The naming rule both sides share: `path` with ".<pid>" (and "-<extra>" when given) before
 * its basename's extension (a leading dot is not one): out.json -> out.42.json. Used for a
 * descendant's profile, and by ospreyd when another profiled process has just written `path`
 * (two processes of a pipeline, both started with the same OSPREY_PROFILE). Returns 0, or
 * -ENAMETOOLONG when it does not fit outsz. */
static inline int osp_per_pid_path(const char *path, long pid, const char *extra, char *out,
                                   size_t outsz)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (dot == base || dot == NULL)
        dot = base + strlen(base);
    int n = snprintf(out, outsz, "%.*s.%ld%s%s%s", (int)(dot - path), path, pid, extra ? "-" : "",
                     extra ? extra : "", dot);
    return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
}

/* Round a record length up to the 8-byte record alignment. */
static inline uint32_t osp_rec_align(uint32_t n)
{
    return (n + 7u) & ~7u;
}

/* Waking the collector. A collector of a ring with OSP_RING_WAKES may sleep for long (its
 * liveness tick) instead of reading the rings on a tick paced by their fill: it stores
 * `napping` OSP_NAPPING (seq_cst), then reads every ring's fill once more (a ring already
 * half full: it reads now). A producer that leaves its ring (a slot's, or the event ring)
 * half full or more, after its release store of head, loads `napping` (after a seq_cst
 * fence): OSP_NAPPING, it takes it (compare-exchange to OSP_AWAKE) and the one that took it
 * sends the collector (daemon_pid) SIGURG; a send that fails stores OSP_NAP_REFUSED. One of
 * the two sides sees the other's store (as in Dekker's), so a ring half full is never left to
 * a sleeping collector; one wake a nap, whatever the number of rings past their mark. A
 * ring under half full costs its producer one relaxed load of its own tail per record. */
enum osp_napping {
    OSP_AWAKE = 0,
    OSP_NAPPING = 1,
    OSP_NAP_REFUSED = 2,
};
static inline bool osp_ring_past_mark(uint64_t head, uint64_t tail, uint64_t size)
{
    return head - tail >= size / 2;
}

/* The only accessors of a ring's indices (the header's head and tail, or a slot's). See the
 * diagram above for (A)..(D). */
static inline uint64_t osp_index_load_acquire(_Atomic uint64_t *index)
{
    return atomic_load_explicit(index, memory_order_acquire); /* (A) or (C) */
}
static inline void osp_index_store_release(_Atomic uint64_t *index, uint64_t v)
{
    atomic_store_explicit(index, v, memory_order_release); /* (B) or (D) */
}
/* An index read by its only writer: relaxed is enough. */
static inline uint64_t osp_index_load_own(_Atomic uint64_t *index)
{
    return atomic_load_explicit(index, memory_order_relaxed);
}

static inline uint64_t osp_ring_load_tail_acquire(struct osp_ring_header *h)
{
    return osp_index_load_acquire(&h->tail); /* (A) pairs with (D) */
}
static inline void osp_ring_store_head_release(struct osp_ring_header *h, uint64_t v)
{
    osp_index_store_release(&h->head, v); /* (B) pairs with (C) */
}
static inline uint64_t osp_ring_load_head_acquire(struct osp_ring_header *h)
{
    return osp_index_load_acquire(&h->head); /* (C) pairs with (B) */
}
static inline void osp_ring_store_tail_release(struct osp_ring_header *h, uint64_t v)
{
    osp_index_store_release(&h->tail, v); /* (D) pairs with (A) */
}
/* The producer's own head, and the consumer's own tail: only their writer reads these,
 * so relaxed is enough (no other thread stores them). */
static inline uint64_t osp_ring_load_head_own(struct osp_ring_header *h)
{
    return osp_index_load_own(&h->head);
}
static inline uint64_t osp_ring_load_tail_own(struct osp_ring_header *h)
{
    return osp_index_load_own(&h->tail);
}

#endif /* OSP_RING_H */
