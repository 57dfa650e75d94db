/* osp_ring.h — the shared-memory ABI between the shim (in the target) and ospreyd.
 *
 * One POSIX shared-memory object per profiled process, created by the shim with
 * O_CREAT|O_EXCL, mode 0600, under an unguessable name ("/osprey-<pid>-<64 random bits hex>"),
 * sized OSP_RING_HEADER_SIZE + data_size. ospreyd maps it, checks the header, and unlinks
 * the name as soon as it has attached; from then on only the two mappings keep it alive.
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

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define OSP_RING_MAGIC UINT64_C(0x31474e495250534f) /* "OSPRING1" as little-endian bytes */
#define OSP_RING_ABI_VERSION 1u
#define OSP_RING_HEADER_SIZE 4096u
#define OSP_RING_CACHE_LINE 64u
#define OSP_RING_DEFAULT_DATA_SIZE (8u << 20) /* 8 MiB */
#define OSP_RING_MAX_DATA_SIZE (1u << 30)

#define OSP_MAX_DEPTH 128u     /* frame cap of a sample ([PROF-COLLECT-UNWIND]) */
#define OSP_MAX_LABEL 64u      /* bytes of a thread label, NUL not included */
#define OSP_MAX_PATH 4096u     /* bytes of an image path, NUL not included */
#define OSP_ARCH_SIZE 16u      /* arch name field, NUL-padded */
#define OSP_PLATFORM_SIZE 32u  /* platform field, NUL-padded */

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
    uint64_t magic;        /* OSP_RING_MAGIC */
    uint32_t abi_version;  /* OSP_RING_ABI_VERSION */
    uint32_t header_size;  /* OSP_RING_HEADER_SIZE */
    uint64_t data_offset;  /* == OSP_RING_HEADER_SIZE */
    uint64_t data_size;    /* power of two, <= OSP_RING_MAX_DATA_SIZE */
    int32_t pid;           /* target process id */
    uint32_t rate_hz;      /* requested per-thread sampling rate after clamping */
    uint64_t start_unix_ns;/* CLOCK_REALTIME at activation */
    uint64_t start_mono_ns;/* CLOCK_MONOTONIC at activation; sample t_ns are on this clock */
    char platform[OSP_PLATFORM_SIZE]; /* e.g. "linux-x86_64", NUL-padded */
    uint8_t reserved0[40];

    /* --- state words (cache line 2) --- */
    alignas(OSP_RING_CACHE_LINE) _Atomic uint32_t shim_state; /* enum osp_shim_state; the
        store of OSP_SHIM_EXITED is release, after the exit record's head store; ospreyd
        loads it acquire. */
    _Atomic uint32_t daemon_state;  /* enum osp_daemon_state; ospreyd stores release after
        the file is renamed (DONE) or daemon_error is written (FAILED); the shim loads acquire. */
    _Atomic int32_t daemon_pid;     /* written by ospreyd at attach (relaxed; informational) */
    uint32_t reserved1;
    _Atomic uint64_t dropped;       /* samples lost inside the target (per-thread ring full,
        event ring full, interning/allocation failure). Written by the shim's sampler
        (relaxed increments); ospreyd reads it relaxed after acquiring shim_state or after the
        target has died: a count, not a synchronisation point. */
    _Atomic uint64_t heartbeat_ns;  /* CLOCK_MONOTONIC of the sampler's last tick (relaxed);
        lets ospreyd tell a live target from one that exec'd away from this ring. */
    char daemon_error[256];         /* ospreyd: one NUL-terminated line, valid when FAILED */

    /* --- producer index: its own cache line --- */
    alignas(OSP_RING_CACHE_LINE) _Atomic uint64_t head; /* written by the shim: (B) */
    /* --- consumer index: its own cache line --- */
    alignas(OSP_RING_CACHE_LINE) _Atomic uint64_t tail; /* written by ospreyd: (D) */
    alignas(OSP_RING_CACHE_LINE) uint8_t reserved2[OSP_RING_CACHE_LINE];
};

_Static_assert(sizeof(struct osp_ring_header) <= OSP_RING_HEADER_SIZE, "header fits its page");
_Static_assert(offsetof(struct osp_ring_header, magic) == 0, "magic first");
_Static_assert(offsetof(struct osp_ring_header, abi_version) == 8, "ABI version second");
_Static_assert(offsetof(struct osp_ring_header, shim_state) == 128, "state words on line 2");
_Static_assert(offsetof(struct osp_ring_header, head) % OSP_RING_CACHE_LINE == 0, "head alone");
_Static_assert(offsetof(struct osp_ring_header, tail) - offsetof(struct osp_ring_header, head)
                   >= OSP_RING_CACHE_LINE, "head and tail on separate cache lines");

/* Record types. */
enum osp_rec_type {
    OSP_REC_PAD = 0,          /* filler up to the end of the data area; skip `size` bytes */
    OSP_REC_THREAD_START = 1, /* struct osp_rec_thread_start + label bytes */
    OSP_REC_THREAD_END = 2,   /* struct osp_rec_thread_end */
    OSP_REC_SAMPLE = 3,       /* struct osp_rec_sample + depth * uint64_t pcs (leaf first) */
    OSP_REC_REPEAT = 4,       /* struct osp_rec_repeat: reuse the slot's last sample stack */
    OSP_REC_IMAGE = 5,        /* struct osp_rec_image + path bytes */
    OSP_REC_EXIT = 6,         /* struct osp_rec_exit; the last record */
};

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
    int64_t fiber;       /* fiber id; the preload library uses the kernel tid, main is 0 */
    int32_t tid;         /* kernel thread id */
    uint32_t label_len;  /* <= OSP_MAX_LABEL; label bytes follow, not NUL-terminated */
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
    uint64_t t_ns;       /* CLOCK_MONOTONIC; minus header.start_mono_ns gives t_rel_ns */
    uint32_t slot;
    uint32_t generation;
    uint32_t state;      /* enum osp_thread_state */
    uint32_t depth;      /* 1..OSP_MAX_DEPTH */
    /* uint64_t pcs[depth]; leaf first; pcs[0] is the precise pc, the rest return addresses */
};

struct osp_rec_repeat {
    struct osp_rec_header h;
    uint64_t t_ns;
    uint32_t slot;
    uint32_t generation;
    uint32_t state;      /* always OSP_STATE_WAITING today */
    uint32_t reserved;
};

struct osp_rec_image {
    struct osp_rec_header h;
    uint64_t base;       /* ELF load base (address of the ELF header in memory) */
    uint64_t slide;      /* load bias: runtime address minus link-time address */
    uint64_t text;       /* start of the span of PF_X PT_LOAD segments (runtime address) */
    uint64_t text_size;  /* its length in bytes; 0 when unknown */
    char arch[OSP_ARCH_SIZE]; /* ELF machine name ("x86_64", "aarch64"), NUL-padded */
    uint32_t flags;      /* OSP_IMAGE_MAIN for the main executable */
    uint32_t path_len;   /* <= OSP_MAX_PATH; path bytes follow, not NUL-terminated */
    /* char path[path_len]; padding to 8 */
};
#define OSP_IMAGE_MAIN 1u

struct osp_rec_exit {
    struct osp_rec_header h;
    uint64_t end_unix_ns; /* CLOCK_REALTIME when the shim stopped sampling */
    uint64_t dropped;     /* final value of header.dropped */
};

_Static_assert(sizeof(struct osp_rec_header) == 8, "record header");
_Static_assert(sizeof(struct osp_rec_thread_start) % 8 == 0, "aligned");
_Static_assert(sizeof(struct osp_rec_thread_end) % 8 == 0, "aligned");
_Static_assert(sizeof(struct osp_rec_sample) == 32, "sample record");
_Static_assert(sizeof(struct osp_rec_repeat) == 32, "repeat record");
_Static_assert(sizeof(struct osp_rec_image) % 8 == 0, "aligned");
_Static_assert(sizeof(struct osp_rec_exit) == 24, "exit record");

/* Round a record length up to the 8-byte record alignment. */
static inline uint32_t osp_rec_align(uint32_t n) { return (n + 7u) & ~7u; }

/* The only accessors of head and tail. See the diagram above for (A)..(D). */
static inline uint64_t osp_ring_load_tail_acquire(struct osp_ring_header *h)
{
    return atomic_load_explicit(&h->tail, memory_order_acquire); /* (A) pairs with (D) */
}
static inline void osp_ring_store_head_release(struct osp_ring_header *h, uint64_t v)
{
    atomic_store_explicit(&h->head, v, memory_order_release); /* (B) pairs with (C) */
}
static inline uint64_t osp_ring_load_head_acquire(struct osp_ring_header *h)
{
    return atomic_load_explicit(&h->head, memory_order_acquire); /* (C) pairs with (B) */
}
static inline void osp_ring_store_tail_release(struct osp_ring_header *h, uint64_t v)
{
    atomic_store_explicit(&h->tail, v, memory_order_release); /* (D) pairs with (A) */
}
/* The producer's own head, and the consumer's own tail: only their writer reads these,
 * so relaxed is enough (no other thread stores them). */
static inline uint64_t osp_ring_load_head_own(struct osp_ring_header *h)
{
    return atomic_load_explicit(&h->head, memory_order_relaxed);
}
static inline uint64_t osp_ring_load_tail_own(struct osp_ring_header *h)
{
    return atomic_load_explicit(&h->tail, memory_order_relaxed);
}

#endif /* OSP_RING_H */
