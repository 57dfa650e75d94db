/* perf-records.c — the kernel's perf records, as the events ospreyd opens on a process it
 * attaches to lay them out (ospd_attach.h): samples with the user registers and a copy of
 * the user stack, the thread's own context switches, and the count of records lost. Pure:
 * the tests hand it records they built.
 *
 * Nothing is trusted beyond its own length: a record shorter than its type needs is refused,
 * a stack copy is bounded by the record, and dyn_size by the copy.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>

#include "ospd_attach.h"

/* A reader of one record's bytes that refuses to run past its end. */
struct cursor {
    const uint8_t *at, *end;
    bool short_read;
};

static uint64_t take64(struct cursor *c)
{
    uint64_t v = 0;
    if (c->end - c->at < 8) {
        c->short_read = true;
        c->at = c->end;
        return 0;
    }
    memcpy(&v, c->at, 8);
    c->at += 8;
    return v;
}

/* The sample id at the end of a non-sample record: u32 pid, tid; u64 time; u64 identifier. */
static int sample_id(const uint8_t *rec, size_t size, size_t body, struct ospd_perf_record *out)
{
    if (size < body + 24)
        return -EPROTO;
    const uint8_t *id = rec + size - 24;
    memcpy(&out->pid, id, 4);
    memcpy(&out->tid, id + 4, 4);
    memcpy(&out->time_ns, id + 8, 8);
    memcpy(&out->id, id + 16, 8);
    return 0;
}

static int parse_sample(const uint8_t *rec, size_t size, struct ospd_perf_record *out)
{
    struct cursor c = {rec + sizeof(struct perf_event_header), rec + size, false};
    out->id = take64(&c);
    take64(&c); /* ip: the kernel's when in the kernel; the user pc is in the registers */
    uint64_t pid_tid = take64(&c);
    out->pid = (uint32_t)pid_tid;
    out->tid = (uint32_t)(pid_tid >> 32);
    out->time_ns = take64(&c);
    /* The kernel's part of the call chain (exclude_callchain_user): context markers
     * (PERF_CONTEXT_KERNEL...) among the addresses, dropped by the reader. */
    uint64_t chain = take64(&c);
    if (c.short_read || chain > (uint64_t)(c.end - c.at) / 8)
        return -EPROTO;
    out->kernel = c.at;
    out->kernel_count = (uint32_t)chain;
    c.at += chain * 8;
    uint64_t abi = take64(&c);
    out->has_regs = abi != PERF_SAMPLE_REGS_ABI_NONE;
    if (out->has_regs)
        for (uint32_t i = 0; i < OSPD_PERF_REGS; i++)
            out->regs[i] = take64(&c);
    uint64_t copy = take64(&c);
    if (c.short_read || copy > (uint64_t)(c.end - c.at))
        return -EPROTO;
    out->stack = c.at;
    c.at += copy;
    uint64_t dyn = copy != 0 ? take64(&c) : 0;
    if (c.short_read)
        return -EPROTO;
    out->stack_size = dyn < copy ? dyn : copy;
    return 0;
}

int ospd_perf_parse(const uint8_t *rec, size_t size, struct ospd_perf_record *out)
{
    memset(out, 0, sizeof *out);
    struct perf_event_header h;
    if (size < sizeof h)
        return -EPROTO;
    memcpy(&h, rec, sizeof h);
    if (h.size != size)
        return -EPROTO;
    switch (h.type) {
    case PERF_RECORD_SAMPLE:
        out->kind = OSPD_PERF_SAMPLE;
        return parse_sample(rec, size, out);
    case PERF_RECORD_SWITCH:
        out->kind = OSPD_PERF_SWITCH;
        out->out = (h.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
        out->preempted = out->out && (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
        return sample_id(rec, size, sizeof h, out);
    case PERF_RECORD_LOST:
        out->kind = OSPD_PERF_LOST;
        if (size < sizeof h + 16)
            return -EPROTO;
        memcpy(&out->lost, rec + sizeof h + 8, 8);
        return sample_id(rec, size, sizeof h + 16, out);
    default:
        out->kind = OSPD_PERF_OTHER;
        return 0;
    }
}
