/* ospd_attach.h — profiling a process started without the profiler, from outside: the pure
 * parts (the kernel's perf records parsed, a copied user stack walked by the unwind rows,
 * /proc/PID/maps read into images), which the tests drive with hand-built input, and the
 * perf-event source and the attach command that put them to work (perf-source.c, attach.c).
 * The mechanism and why: daemon/README.md, "Attaching to a running process".
 */
#ifndef OSPD_ATTACH_H
#define OSPD_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "osp_unwind_step.h"
#include "ospd.h"

/* ------------------------------------------------------------------------------------------ */
/* The kernel's records (perf-records.c). Every event ospreyd opens has the same sample_type,
 * OSPD_PERF_SAMPLE_TYPE, and sample_id_all, so one parser reads every record of a ring:
 *   sample:  u64 identifier; u64 ip; u32 pid, tid; u64 time; u64 nr; u64 ips[nr] (the
 *            kernel's part of the call chain, context markers included); u64 abi;
 *            u64 regs[OSPD_PERF_REGS] (if abi != 0); u64 size; u8 data[size];
 *            u64 dyn_size (if size != 0)
 *   others:  their body, then the sample id: u32 pid, tid; u64 time; u64 identifier
 */
#define OSPD_PERF_REGS 3u /* the user registers asked for, in bit order: fp, sp, pc */
enum { OSPD_REG_FP = 0, OSPD_REG_SP = 1, OSPD_REG_PC = 2 };

enum ospd_perf_kind {
    OSPD_PERF_OTHER = 0, /* a record ospreyd does not use (throttle, comm, ...) */
    OSPD_PERF_SAMPLE,
    OSPD_PERF_SWITCH, /* PERF_RECORD_SWITCH of the thread itself */
    OSPD_PERF_LOST,   /* PERF_RECORD_LOST: records the kernel had no room for */
};

struct ospd_perf_record {
    enum ospd_perf_kind kind;
    uint32_t pid, tid;
    uint64_t time_ns; /* CLOCK_MONOTONIC (use_clockid) */
    uint64_t id;      /* the event's identifier (its parent's for an inherited event) */
    /* SAMPLE */
    bool has_regs;
    uint64_t regs[OSPD_PERF_REGS];
    const uint8_t *stack;  /* the copy of the user stack from regs[SP] up, inside the record */
    uint64_t stack_size;   /* bytes of it that are valid (dyn_size) */
    const uint8_t *kernel; /* kernel_count u64s: the kernel's call chain, leaf first, with the
                              context markers (>= PERF_CONTEXT_MAX) the kernel puts in it */
    uint32_t kernel_count;
    /* SWITCH */
    bool out, preempted;
    /* LOST */
    uint64_t lost;
};

/* Parse one record, rec[0..size) (its perf_event_header first; size from that header, the
 * record copied out of the ring whole). Returns 0, or -EPROTO for a record too short for
 * what its type says it holds. */
int ospd_perf_parse(const uint8_t *rec, size_t size, struct ospd_perf_record *out);

/* ------------------------------------------------------------------------------------------ */
/* The walk of a copied stack (stack-walk.c). */

struct ospd_stack_copy {
    uint64_t sp;          /* the address the copy starts at */
    const uint8_t *bytes; /* [sp, sp + size) of the thread's stack, as it was */
    uint64_t size;
};

/* Walk from (pc, sp, fp) through the copy: each frame by its row in the unwind table object
 * [tables, tables + tables_size) (proto/osp_unwind.h; NULL for none), else by the frame
 * pointer chain, by the walk the shim's handler runs on its own stack (osp_unwind_walk_deep).
 * Every word read must lie inside the copy; each step must move sp up (at most 1 MiB); the walk
 * ends at the first check that fails, an outermost frame, or OSP_UNWIND_MAX_STEPS frames, and
 * *stop says which (proto/osp_unwind_step.h). A stack deeper than cap is folded into cap as the
 * handler folds it: its innermost frames, one marker of those left out, its
 * OSP_UNWIND_OUTER_FRAMES outermost (cut at cap when cap is too short for that). Returns the
 * count written to out (>= 1 when cap >= 1: the pc itself). */
uint32_t ospd_walk_copy_why(const void *tables, uint64_t tables_size, uint64_t pc, uint64_t sp,
                            uint64_t fp, const struct ospd_stack_copy *stack, uint64_t *out,
                            uint32_t cap, enum osp_unwind_stop *stop);
/* The same walk from any frame's registers, cut at cap (the caller folds: copies.c puts the
 * handler's frames before it): `leaf` says they are an interrupted instant's (its pc looked up
 * as it is), else regs->pc is a return address (looked up at pc - 1). `resume` (may be NULL):
 * the first frame it met with no row while rows were being built. */
struct osp_unwind_regs;
struct osp_unwind_resume;
uint32_t ospd_walk_copy_regs(const void *tables, uint64_t tables_size,
                             const struct osp_unwind_regs *regs, int leaf,
                             const struct ospd_stack_copy *stack, uint64_t *out, uint32_t cap,
                             enum osp_unwind_stop *stop, struct osp_unwind_resume *resume);
/* A perf sample's stack into pcs (OSP_MAX_DEPTH of them), leaf first: with_kernel, its kernel
 * frames (its call chain, context markers dropped; at most OSP_MAX_DEPTH / 2), then its user
 * stack walked from the copy (ospd_walk_copy_why) and folded into the frames the kernel's
 * leave (at least 64: room for the marker and the outermost ones). Returns the depth; *stop
 * says why the user walk ended. */
uint32_t ospd_perf_stack(const void *tables, uint64_t tables_size, const struct ospd_perf_record *p,
                         bool with_kernel, uint64_t *pcs, enum osp_unwind_stop *stop);
/* pcs[0..depth), a walk deeper than a record of cap frames, made one as the handler's walk
 * keeps it (proto/osp_unwind_step.h, osp_unwind_walk_on): the innermost cap - 1 -
 * OSP_UNWIND_OUTER_FRAMES frames, the marker of those left out, the outermost
 * OSP_UNWIND_OUTER_FRAMES. The new depth (depth itself when it is within cap). */
uint32_t ospd_stack_keep_ends(uint64_t *pcs, uint32_t depth, uint32_t cap);
/* [addr, addr + size) of process pid's memory into out, page by page (process_vm_readv), up to
 * the first page that cannot be read (a stack's top). Returns the bytes read. */
uint64_t ospd_read_stack(int32_t pid, uint64_t addr, uint8_t *out, uint64_t size);

/* ------------------------------------------------------------------------------------------ */
/* /proc/PID/maps (proc-maps.c). */

struct ospd_mapping {
    uint64_t start, end, offset;
    char perms[5];
    uint64_t inode;
    const char *path; /* inside the text parsed; "" for an anonymous mapping */
    size_t path_len;
};

/* Parse one line of /proc/PID/maps (without its newline, NUL-terminated). 0 or -EINVAL. */
int ospd_maps_line(const char *line, struct ospd_mapping *out);

/* An image as the shim describes one (proto/osp_ring.h's IMAGE record), from the mappings of
 * one object and its program headers. */
struct ospd_phdr {
    uint32_t type, flags;
    uint64_t offset, vaddr, memsz;
};
/* base: the address file offset 0 is mapped at (the lowest mapping less its offset), slide:
 * the load bias from the PT_LOAD that holds that mapping's offset, text/text_size: the span
 * of the PF_X PT_LOADs, relocated. 0, or -ENOENT when the headers hold no PT_LOAD. */
int ospd_image_from_phdrs(const struct ospd_phdr *ph, uint32_t count, uint64_t lowest_start,
                          uint64_t lowest_offset, uint64_t *base, uint64_t *slide, uint64_t *text,
                          uint64_t *text_size);

/* Read /proc/PID/maps (PID: proc_pid, the number /proc gives the process, c->proc_pid) and
 * give the collector every object mapped executable (and the
 * vDSO), main set on the one whose path is the executable's. Returns how many images are
 * known, or a negative errno when the maps cannot be read. Touches the system. */
int ospd_maps_images(struct ospd_collector *c, int32_t proc_pid);
/* Read /proc/PID/maps and give the collector an image for every executable mapping of a file
 * whose range no image still mapped meets in its code span, of a file an image is of at another
 * load bias: an object's code mapped a second time elsewhere (V8 maps node's embedded builtins
 * again from /usr/bin/node, next to its heap), its text the mapping alone, its slide the file's
 * address of the offset mapped at its start. With `ring` (the shim's ring's name), only while the
 * maps hold it (not after an exec). At most 16 a call. Returns how many were added, or a negative
 * errno when the maps cannot be read. Touches the system. */
int ospd_maps_code(struct ospd_collector *c, int32_t proc_pid, const char *ring);

/* ------------------------------------------------------------------------------------------ */
/* The live stream (stream.c): `--stream` writes what was collected since the last flush as
 * lines of text on stdout instead of a raw file at the end (the format: stream.c). */

struct ospd_stream {
    FILE *out;
    uint32_t images_sent, stacks_sent, threads_sent; /* what the reader has already */
};

/* The first line. 0, or -EPIPE when the reader is gone. */
int ospd_stream_begin(struct ospd_stream *s, FILE *out, int32_t pid, uint32_t rate_hz);
/* The images and stacks the reader has not seen, every sample collected, then "flush": the
 * collector's samples are emptied. 0, or -EPIPE when the reader is gone. */
int ospd_stream_flush(struct ospd_stream *s, struct ospd_collector *c, uint64_t now_rel_ns);
/* The last line: how the process ended, from c->exit_status (or that it runs on). */
void ospd_stream_end(struct ospd_stream *s, const struct ospd_collector *c);

/* ------------------------------------------------------------------------------------------ */
/* Perf events as a source of the collector's session (attach.c): `ospreyd --attach-pid PID
 * --out PATH [--rate N] [--duration S] [--export LIST]`, or with `--stream` instead of
 * `--out` (the command line is ospreyd.c's). */
struct ospd_perf_options {
    int32_t pid;
    const char *out; /* the raw file, or NULL with stream */
    const char *export_formats;
    double duration; /* seconds, or 0: until SIGINT, SIGTERM or the process's end */
    bool stream;     /* lines on stdout (stream.c) instead of a raw file */
    uint32_t rate;
};
/* A perf-events source for ospd_session_run, or NULL when out of memory. */
void *ospd_perf_collector_new(const struct ospd_perf_options *o);
struct ospd_source_ops;
extern const struct ospd_source_ops ospd_perf_events;

#endif /* OSPD_ATTACH_H */
