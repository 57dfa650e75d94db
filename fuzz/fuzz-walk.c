/* fuzz-walk.c — fuzz target for the one unwinder (proto/osp_unwind_step.h) over hostile unwind
 * tables and a hostile stack, run by both of its walkers: the SIGPROF handler's walk of its
 * live stack (shim/unwind.c, osp__unwind_why) and ospreyd's walk of a stack copy
 * (daemon/stack-walk.c, ospd_walk_copy_why, the same area as the copy): the promise that a
 * corrupt table or stack ends a walk and never makes it read outside the table mapping or the
 * thread's stack (or the copy).
 *
 * The input, little-endian:
 *
 *   offset  size
 *   0       8     pc of the interrupted instant
 *   8       2     sp, as a byte offset into the stack area (taken modulo its size)
 *   10      2     fp, as a byte offset into the stack area (any value: may point outside)
 *   12      1     flags: bit 0 the leaf's lr is set (aarch64's form), bit 1 regs are a
 *                 caller's (leaf = 0), bit 2 the walk is given several stacks
 *                 (osp__unwind_spans): the stack area's first half in place, its second half
 *                 as the copy of a stack at the address of a PROT_NONE mapping (a read in place
 *                 there faults), and a spare copy buffer for a stack reached through a signal
 *                 frame (shim/stacks.c); bit 3 the leaf's other registers (iregs, for a
 *                 row whose CFA is in one: OSP_CFA_REG) are the stack area's first words
 *   13      S     the stack area, S = STACK_BYTES (zero-filled when the input ends early);
 *                 a word whose top 16 bits are 0xfeed is rewritten to the stack's own address
 *                 plus its low bits, and 0xfeee to the unreadable copied stack's, so chains of
 *                 frame records and CFAs inside the stacks are easy to reach
 *   13+S    T     the table object's first T bytes (the rest of TABLE_BYTES zero): header,
 *                 index snapshot, entries, rows, at whatever offsets the input says
 *
 * Both areas sit in their own mappings between PROT_NONE guard pages, so a read past either
 * faults (the walk's reads are exempt from AddressSanitizer: they read foreign frames). Each
 * walk must return a depth in 1..cap and a stop reason. (Their frames are not compared: the
 * shim alone reads the leaf's code, and a hostile pc may point into the stack area.)
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "osp_core.h"
#include "osp_unwind.h"
#include "osp_unwind_step.h"
#include "ospd_attach.h"

#define STACK_BYTES 4096u
#define TABLE_BYTES 65536u
#define PREFIX_SIZE 13u

static uint8_t *guarded(size_t bytes)
{
    size_t page = 4096;
    uint8_t *map = mmap(NULL, bytes + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    FUZZ_CHECK(map != MAP_FAILED, "mmap");
    FUZZ_CHECK(mprotect(map + page, bytes, PROT_READ | PROT_WRITE) == 0, "mprotect");
    return map + page;
}

static uint64_t little(const uint8_t *p, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t *stack, *table, *unreadable, *spare;
    if (stack == NULL) {
        stack = guarded(STACK_BYTES);
        table = guarded(TABLE_BYTES);
        spare = guarded(OSP__STACK_COPY_BYTES);
        unreadable = mmap(NULL, STACK_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        FUZZ_CHECK(unreadable != MAP_FAILED, "mmap");
    }
    uint64_t away = (uint64_t)(uintptr_t)unreadable;
    uint8_t prefix[PREFIX_SIZE] = {0};
    memcpy(prefix, data, size < PREFIX_SIZE ? size : PREFIX_SIZE);
    size_t rest = size > PREFIX_SIZE ? size - PREFIX_SIZE : 0;
    const uint8_t *body = data + (size - rest);
    memset(stack, 0, STACK_BYTES);
    memcpy(stack, body, rest < STACK_BYTES ? rest : STACK_BYTES);
    uint64_t base = (uint64_t)(uintptr_t)stack;
    for (size_t at = 0; at + 8 <= STACK_BYTES; at += 8) {
        uint64_t word;
        memcpy(&word, stack + at, 8);
        if (word >> 48 == 0xfeed || word >> 48 == 0xfeee) {
            word = (word >> 48 == 0xfeed ? base : away) + (word & 0xffff);
            memcpy(stack + at, &word, 8);
        }
    }
    size_t table_rest = rest > STACK_BYTES ? rest - STACK_BYTES : 0;
    memset(table, 0, TABLE_BYTES);
    memcpy(table, body + (rest - table_rest), table_rest < TABLE_BYTES ? table_rest : TABLE_BYTES);
    osp__unwind_set_tables(table, TABLE_BYTES);

    struct osp__regs regs = {
        .pc = little(prefix, 8),
        .sp = base + little(prefix + 8, 2) % STACK_BYTES,
        .fp = base + little(prefix + 10, 2),
        .lr = (prefix[12] & 1) ? little(prefix, 8) + 4 : 0,
    };
    regs.sp &= ~(uint64_t)7;
    static uint64_t iregs[OSP_UNWIND_CFA_REGS];
    memcpy(iregs, stack, sizeof iregs); /* after the rewrites: registers into the stacks */
    if (prefix[12] & 8)
        regs.iregs = iregs;
    int leaf = !(prefix[12] & 2);
    uint64_t out[OSP_MAX_DEPTH];
    enum osp_unwind_stop stop;
    uint32_t depth;
    if (prefix[12] & 4) {
        /* The stacks: sp's (in place, or the copy when sp is in the second half), the other,
         * and the spare buffer. */
        struct osp__regs at = regs;
        uint64_t half = STACK_BYTES / 2, off = regs.sp - base;
        struct osp__stack_span first = {base, base + half, NULL, 0};
        struct osp__stack_span copied = {away + half, away + STACK_BYTES, stack + half,
                                         away + half};
        if (at.fp >= base + half && at.fp < base + STACK_BYTES)
            at.fp = away + (at.fp - base); /* the second half's frames are at away's */
        if (off >= half) {
            at.sp = away + off;
            copied.lo = at.sp;
        } else {
            first.lo = at.sp;
        }
        struct osp__stack_span spans[3] = {
            off >= half ? copied : first, off >= half ? first : copied, {0, 0, spare, 0}};
        depth = osp__unwind_spans_why(&at, leaf, spans, 3, out, OSP_MAX_DEPTH, &stop);
    } else {
        depth =
            osp__unwind_why(&regs, leaf, regs.sp, base + STACK_BYTES, out, OSP_MAX_DEPTH, &stop);
    }
    FUZZ_CHECK(depth >= 1 && depth <= OSP_MAX_DEPTH, "depth %u", depth);
    FUZZ_CHECK(out[0] == regs.pc, "the leaf is the pc");
    FUZZ_CHECK(stop > OSP_UNWIND_GO_ON && stop < OSP_UNWIND_STOP_COUNT, "stop %d", (int)stop);
    osp__unwind_set_tables(NULL, 0);

    struct ospd_stack_copy copy = {regs.sp, stack + (regs.sp - base), base + STACK_BYTES - regs.sp};
    depth = ospd_walk_copy_why(table, TABLE_BYTES, regs.pc, regs.sp, regs.fp, &copy, out,
                               OSP_MAX_DEPTH, &stop);
    FUZZ_CHECK(depth >= 1 && depth <= OSP_MAX_DEPTH, "depth %u", depth);
    FUZZ_CHECK(out[0] == regs.pc, "the leaf is the pc");
    FUZZ_CHECK(stop > OSP_UNWIND_GO_ON && stop < OSP_UNWIND_STOP_COUNT, "stop %d", (int)stop);
    return 0;
}
