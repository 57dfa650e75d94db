/* raw-threads.c — one thread per kernel thread in a raw profile just read: a thread renamed
 * after it started is registered again under its new name (a second entry of the same fiber
 * id and tid), and its entries are folded into one that carries the last label, so every
 * output has one fiber per thread. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "ospc.h"
#include "raw_internal.h"

static uint64_t thread_key_hash(const struct ospx_thread *thread)
{
    int64_t key[2] = {thread->fiber, thread->tid};
    return ospc_hash_bytes(OSPC_HASH_SEED, key, sizeof key);
}

static uint64_t thread_hash_of(uint32_t entry, void *context)
{
    const struct ospx_raw *raw = context;
    return thread_key_hash(&raw->threads[entry]);
}

/* One thread per (fiber, tid): a later registration of the same kernel thread under the same
 * fiber id (it was renamed, and registered again under its new name) is folded into the first,
 * which takes its label; the samples follow. Entries without a tid stay as they are. 0 or
 * -ENOMEM. */
int ospx__raw_merge_renamed_threads(struct ospx_raw *out)
{
    if (out->thread_count < 2)
        return 0;
    uint32_t *merged_into = malloc(out->thread_count * sizeof *merged_into);
    struct ospc_index index;
    if (merged_into == NULL || ospc_index_init(&index, out->thread_count) != 0) {
        free(merged_into);
        return -ENOMEM;
    }
    size_t kept = 0;
    int rc = 0;
    for (size_t i = 0; i < out->thread_count && rc == 0; i++) {
        struct ospx_thread *thread = &out->threads[i];
        uint32_t into = UINT32_MAX;
        size_t slot = ospc_index_start(&index, thread_key_hash(thread));
        for (uint32_t e; thread->tid > 0 && (e = ospc_index_entry(&index, slot)) != UINT32_MAX;
             slot = ospc_index_next(&index, slot)) {
            if (out->threads[e].fiber == thread->fiber && out->threads[e].tid == thread->tid) {
                into = e;
                break;
            }
        }
        if (into != UINT32_MAX) {
            struct ospx_thread *first = &out->threads[into];
            free(first->label);
            first->label = thread->label; /* its latest name */
            thread->label = NULL;
            if (thread->cpu_ns > first->cpu_ns)
                first->cpu_ns = thread->cpu_ns;
            if (thread->preempted_ns > 0)
                first->preempted_ns =
                    (first->preempted_ns > 0 ? first->preempted_ns : 0) + thread->preempted_ns;
            merged_into[i] = into;
            continue;
        }
        into = (uint32_t)kept++;
        if (into != i) {
            out->threads[into] = *thread;
            thread->label = NULL;
        }
        merged_into[i] = into;
        if (thread->tid > 0) /* thread now lives at `into`; hash it from there */
            rc = ospc_index_insert(&index, slot, into, thread_hash_of, out);
    }
    if (rc == 0 && kept < out->thread_count) {
        for (size_t i = kept; i < out->thread_count; i++)
            free(out->threads[i].label);
        out->thread_count = kept;
        for (size_t i = 0; i < out->sample_count; i++)
            out->samples[i].thread = merged_into[out->samples[i].thread];
    }
    ospc_index_free(&index);
    free(merged_into);
    return rc != 0 ? -ENOMEM : 0;
}
