/* osp_unwind.h — the unwind tables ospreyd builds for the shim's SIGPROF handler.
 *
 * Code built without frame pointers (Debian's binaries and libraries, glibc included) can only
 * be unwound from its call-frame information (`.eh_frame`, `.debug_frame`). Evaluating CFI —
 * reading ELF files, decoding CIEs and FDEs, running their programs — is heavy, allocates and
 * is not async-signal-safe, so none of it happens in the program: ospreyd evaluates each
 * image's CFI once into flat rows (one per pc range: how to find the CFA, where the return
 * address and the caller's frame pointer are) and publishes them here; the handler only
 * binary-searches rows and reads the stack.
 *
 * One memfd per profiled process, created by the shim at boot next to the ring
 * (memfd_create, close-on-exec: it has no name, so nothing is ever left in /dev/shm) and
 * sized with ftruncate to header.size bytes, sparse: nothing is reserved until ospreyd
 * writes it. The shim hands the descriptor to ospreyd at spawn, named on its command line
 * (`--unwind-fd N`, placed after the ring at 3, the switch events and the forks' socket), and
 * closes its own. The shim maps it PROT_READ and never writes it after the header; ospreyd
 * maps it read-write and reserves each range with posix_fallocate before writing it (a full
 * memory is an error in ospreyd, never a SIGBUS anywhere). The shim reads only what has been
 * published, and a page never written reads as zeros, so a read of the mapping cannot fault.
 *
 * Layout:
 *
 *   offset 0                   struct osp_unwind_header (OSP_UNWIND_HEADER_SIZE bytes)
 *   offset OSP_UNWIND_HEADER_SIZE and up: ospreyd's allocations, 16-byte aligned, each
 *     written once and never changed or freed while the program runs:
 *       - row tables: struct osp_unwind_row[row_count] per image, sorted by pc_offset;
 *       - index snapshots: struct osp_unwind_index + entries[count], sorted by start, the
 *         ranges disjoint.
 *
 *   ospreyd                                             handler (any thread, any time)
 *   -------                                             -------------------------------
 *   write the rows of a new image
 *   write a new snapshot (all ready images)
 *   store(index_offset, snapshot, release)   (U1) --->  off = load(index_offset, acquire) (U2)
 *                                                       binary search the snapshot, its rows
 *
 *   (U1) pairs with (U2): a handler that sees a snapshot's offset sees the snapshot and every
 *   row table it names. Since nothing published is ever rewritten, a handler that loaded an
 *   older offset goes on reading a consistent older snapshot; nothing needs a lock or a retry.
 *
 * Untrusted both ways. The handler checks every offset and count it reads against header.size
 * before using it (a corrupt table ends a walk, never the program), and every stack address a
 * row leads it to against the thread's stack bounds. ospreyd never reads this mapping back.
 *
 * Rows are for one architecture (header.arch, the ELF machine number). The register rules:
 *   x86_64:  CFA = rsp or rbp + cfa_offset; return address at CFA + ra_offset (always -8);
 *            caller's rbp unchanged or at CFA + fp_offset.
 *   aarch64: CFA = sp or x29 + cfa_offset; return address in x30 (the leaf, before it is
 *            saved) or at CFA + ra_offset; caller's x29 unchanged or at CFA + fp_offset.
 *   both:    CFA = another register + cfa_offset (OSP_CFA_REG: code that keeps the caller's sp
 *            in a scratch register while it realigns its own, as OpenSSL's AES-GCM does with
 *            rax), usable only where that register's value is known: the interrupted instant
 *            the handler's signal context holds (proto/osp_unwind_step.h).
 *   both:    CFA = the word at sp or fp + cfa_offset, plus a small addend (OSP_CFA_DEREF: code
 *            that saves the caller's sp in its own frame while it realigns rsp, as OpenSSL's
 *            SHA, AES and bignum assembly does, and GCC's stack realignment through a DRAP
 *            register: DW_OP_bregN off; DW_OP_deref; DW_OP_plus_uconst addend).
 */
#ifndef OSP_UNWIND_H
#define OSP_UNWIND_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define OSP_UNWIND_MAGIC       UINT64_C(0x31444e5750534f) /* "OSPWND1\0" as little-endian */
#define OSP_UNWIND_ABI_VERSION 1u
#define OSP_UNWIND_HEADER_SIZE 4096u
/* The object's virtual size: address space only until ospreyd writes. */
#define OSP_UNWIND_DEFAULT_SIZE (UINT64_C(256) << 20)
#define OSP_UNWIND_ALIGN        16u

struct osp_unwind_header {
    /* --- written by the shim at boot, before ospreyd starts; read-only after --- */
    uint64_t magic;        /* OSP_UNWIND_MAGIC */
    uint32_t abi_version;  /* OSP_UNWIND_ABI_VERSION */
    uint32_t header_size;  /* OSP_UNWIND_HEADER_SIZE */
    uint64_t size;         /* bytes of the object, header included */
    uint32_t arch;         /* ELF e_machine of the rows the shim can use (EM_X86_64, EM_AARCH64) */
    uint32_t row_size;     /* sizeof(struct osp_unwind_row) */
    uint8_t reserved0[32]; /* zero */
    /* --- written by ospreyd --- */
    alignas(64) _Atomic uint64_t index_offset; /* (U1)/(U2); 0: no snapshot yet */
    _Atomic uint64_t used;           /* bytes allocated so far, header included (informational) */
    _Atomic uint32_t images_ready;   /* images whose rows are published (informational) */
    _Atomic uint32_t images_failed;  /* images ospreyd could not build rows for */
    _Atomic uint64_t rows_published; /* rows over all published tables */
    _Atomic uint32_t builds_pending; /* images being built now, dropped (release) only once
                                      * an image's rows are published: while it is not 0, or
                                      * the generation moved, a wait's stack captured without
                                      * their rows is taken again (shim/README.md) */
    uint32_t reserved1;
    uint8_t reserved2[64]; /* zero */
};
_Static_assert(sizeof(struct osp_unwind_header) <= OSP_UNWIND_HEADER_SIZE, "header fits");
_Static_assert(offsetof(struct osp_unwind_header, magic) == 0, "magic first");
_Static_assert(offsetof(struct osp_unwind_header, abi_version) == 8, "ABI version second");
_Static_assert(offsetof(struct osp_unwind_header, index_offset) == 64, "ospreyd's line");

/* How a row finds the CFA (the caller's sp at the call, the base of this frame). */
enum osp_unwind_cfa {
    OSP_CFA_UNKNOWN = 0, /* no usable CFI for this pc: the frame-pointer walk takes over */
    OSP_CFA_SP = 1,      /* CFA = sp + cfa_offset */
    OSP_CFA_FP = 2,      /* CFA = fp + cfa_offset */
    OSP_CFA_PLT =
        3, /* x86_64 lazy PLT: CFA = sp + cfa_offset + ((pc & 15) >= ra_offset2 ? 8 : 0) */
    OSP_CFA_SIGNAL = 4, /* the kernel's signal trampoline: the interrupted registers are in the
                         * ucontext_t at sp (x86_64) or sp + 128 + 8 (aarch64 rt_sigframe) */
    OSP_CFA_END = 5,    /* the return address is undefined: the outermost frame (_start,
                         * a thread's first frame) */
    OSP_CFA_REG = 6,    /* CFA = register cfa_reg + cfa_offset, cfa_reg an index into the
                         * registers as the kernel's signal frame stores them: x86_64's
                         * mcontext gregs[] (REG_R8 0 .. REG_R15 7, REG_RDI 8, REG_RSI 9,
                         * REG_RBX 11, REG_RDX 12, REG_RAX 13, REG_RCX 14), aarch64's regs[]
                         * (x0 .. x28); below OSP_UNWIND_CFA_REGS */
    OSP_CFA_DEREF = 7,  /* CFA = the word at (fp if cfa_deref & OSP_CFA_DEREF_FP, else sp) +
                         * cfa_offset, + 8 * (cfa_deref & OSP_CFA_DEREF_WORDS) */
};

/* OSP_CFA_DEREF's cfa_deref: the base register, and the addend in 8-byte words (0..1016 bytes:
 * the expressions seen add 0, 8, 56 or 64). */
#define OSP_CFA_DEREF_FP    0x80u
#define OSP_CFA_DEREF_WORDS 0x7fu

/* OSP_CFA_REG's cfa_reg is below this: x86_64's 16 general registers' slots in gregs[],
 * aarch64's x0..x30. */
#if defined(__aarch64__)
#define OSP_UNWIND_CFA_REGS 31u
#else
#define OSP_UNWIND_CFA_REGS 16u
#endif

/* Where the return address is. */
enum osp_unwind_ra {
    OSP_RA_AT_CFA = 0, /* at CFA + ra_offset */
    OSP_RA_IN_LR = 1,  /* still in the link register (aarch64 before it is saved) */
};

/* Where the caller's frame pointer is. */
enum osp_unwind_fp {
    OSP_FP_SAME = 0,   /* unchanged by this frame */
    OSP_FP_AT_CFA = 1, /* saved at CFA + fp_offset */
};

/* One row: the rule for pcs in [image start + pc_offset, the next row's pc_offset). */
struct osp_unwind_row {
    uint32_t pc_offset; /* from the image entry's start */
    int32_t cfa_offset; /* enum osp_unwind_cfa's offset */
    uint8_t cfa_rule;   /* enum osp_unwind_cfa */
    uint8_t ra_rule;    /* enum osp_unwind_ra */
    uint8_t fp_rule;    /* enum osp_unwind_fp */
    union {
        uint8_t plt_threshold; /* OSP_CFA_PLT's (pc & 15) threshold */
        uint8_t cfa_reg;       /* OSP_CFA_REG's register (enum osp_unwind_cfa) */
        uint8_t cfa_deref;     /* OSP_CFA_DEREF's base and addend (OSP_CFA_DEREF_FP, _WORDS) */
    };                         /* 0 for the other rules */
    int16_t ra_offset;         /* OSP_RA_AT_CFA: the return address at CFA + ra_offset */
    int16_t fp_offset;         /* OSP_FP_AT_CFA: the caller's fp at CFA + fp_offset */
};
_Static_assert(sizeof(struct osp_unwind_row) == 16, "row");
_Static_assert(offsetof(struct osp_unwind_row, cfa_rule) == 8, "rules after offsets");

/* A table object's header as the shim writes it before ospreyd starts: its fields above
 * ospreyd's line, the rest zero. One writer for the shim, ospreyd's attach and the tests. */
static inline void osp_unwind_header_init(struct osp_unwind_header *h, uint64_t size, uint32_t arch)
{
    memset(h, 0, sizeof *h);
    h->magic = OSP_UNWIND_MAGIC;
    h->abi_version = OSP_UNWIND_ABI_VERSION;
    h->header_size = OSP_UNWIND_HEADER_SIZE;
    h->size = size;
    h->arch = arch;
    h->row_size = sizeof(struct osp_unwind_row);
}

/* One image in a snapshot: its executable range and its rows. */
struct osp_unwind_entry {
    uint64_t start;       /* runtime address of the range (the lowest PF_X byte) */
    uint64_t end;         /* exclusive */
    uint64_t rows_offset; /* byte offset of its struct osp_unwind_row[] from the header */
    uint32_t row_count;   /* >= 1 */
    uint32_t flags;       /* reserved, zero */
};
_Static_assert(sizeof(struct osp_unwind_entry) == 32, "entry");

struct osp_unwind_index {
    uint32_t count;      /* entries that follow, sorted by start, disjoint */
    uint32_t reserved;   /* zero */
    uint64_t generation; /* increases with each snapshot (informational) */
    /* struct osp_unwind_entry entries[count]; */
};
_Static_assert(sizeof(struct osp_unwind_index) == 16, "index");

#define OSP_UNWIND_MAX_ENTRIES 4096u

/* The published snapshot, or NULL: an acquire load (U2) pairing with ospreyd's release (U1),
 * every offset checked against the object's size. `map` is the mapping's first byte and
 * `size` the size the shim mapped (never the header's word alone). Async-signal-safe. */
static inline const struct osp_unwind_index *osp_unwind_snapshot(const void *map, uint64_t size)
{
    const struct osp_unwind_header *h = (const struct osp_unwind_header *)map;
    uint64_t off = atomic_load_explicit((_Atomic uint64_t *)&h->index_offset,
                                        memory_order_acquire); /* (U2) pairs with (U1) */
    if (off < OSP_UNWIND_HEADER_SIZE || off % OSP_UNWIND_ALIGN || off > size ||
        size - off < sizeof(struct osp_unwind_index))
        return NULL;
    const struct osp_unwind_index *ix =
        (const struct osp_unwind_index *)((const uint8_t *)map + off);
    if (ix->count > OSP_UNWIND_MAX_ENTRIES ||
        (size - off - sizeof *ix) / sizeof(struct osp_unwind_entry) < ix->count)
        return NULL;
    return ix;
}

static inline const struct osp_unwind_entry *osp_unwind_entries(const struct osp_unwind_index *ix)
{
    return (const struct osp_unwind_entry *)(ix + 1);
}

/* The row for pc in snapshot ix of the table object [map, map + size), or NULL: the last
 * entry starting at or below pc, if pc is inside it, and its last row starting at or below
 * pc; every offset and count checked against size. Async-signal-safe. (ospreyd's walker of
 * stack copies, daemon/stack-walk.c, reads rows with it.) */
static inline const struct osp_unwind_row *
osp_unwind_find_row(const void *map, uint64_t size, const struct osp_unwind_index *ix, uint64_t pc)
{
    const struct osp_unwind_entry *e = osp_unwind_entries(ix);
    uint32_t lo = 0, hi = ix->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (e[mid].start <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct osp_unwind_entry *image = &e[lo - 1];
    uint64_t offset = image->rows_offset, count = image->row_count;
    if (pc >= image->end || image->end - image->start > UINT32_MAX || count == 0 ||
        offset % OSP_UNWIND_ALIGN || offset > size ||
        (size - offset) / sizeof(struct osp_unwind_row) < count)
        return NULL;
    const struct osp_unwind_row *rows =
        (const struct osp_unwind_row *)((const uint8_t *)map + offset);
    uint32_t at = (uint32_t)(pc - image->start);
    uint64_t l = 0, h = count;
    while (l < h) {
        uint64_t mid = l + (h - l) / 2;
        if (rows[mid].pc_offset <= at)
            l = mid + 1;
        else
            h = mid;
    }
    return l == 0 ? NULL : &rows[l - 1];
}

#endif /* OSP_UNWIND_H */
