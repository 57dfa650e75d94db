/* tick.c — one round of ospreyd's tick: which slots of the target it looks at.
 *
 * Owns the watch list (proto/osp_ring.h, "Slots"): the slots the shim raised in the attention
 * bitmap (a thread registered, or ran again) are added, and those neither running nor holding
 * samples are dropped once drained, so a tick costs the running threads, not the sleeping
 * ones. The program's threads sample themselves (each arms its own timer, shim/handler.c);
 * ospreyd sends no signal. Also the round counter the shim waits on before execve, and the
 * check that lets the collector nap (proto/osp_ring.h, "Waking the collector"). Nothing here
 * trusts the slots beyond their index bounds.
 */

#include "ospd.h"

void ospd_watch_take(struct osp_ring_header *h, uint64_t *watch)
{
    for (uint32_t w = 0; w < OSP_ATTENTION_WORDS; w++)
        /* Relaxed load first: most words are 0 and need no exchange (no cache line taken). */
        if (atomic_load_explicit(&h->attention[w], memory_order_relaxed) != 0)
            /* Acquire: pairs with the shim's release after it stored the slot's state. */
            watch[w] |= atomic_exchange_explicit(&h->attention[w], 0, memory_order_acquire);
}

void ospd_watch_settle(uint8_t *slots, uint32_t slot_ring_size, uint64_t *watch)
{
    for (uint32_t w = 0; w < OSP_ATTENTION_WORDS; w++)
        for (uint64_t bits = watch[w]; bits != 0; bits &= bits - 1) {
            uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
            struct osp_slot *s = osp_slot_at(slots, slot_ring_size, i);
            /* Not running and nothing left to read: the shim raises its bit when it runs. */
            if (atomic_load_explicit(&s->state, memory_order_relaxed) != OSP_SLOT_RUNNING &&
                osp_index_load_acquire(&s->head) == osp_index_load_own(&s->tail))
                watch[w] &= ~(UINT64_C(1) << (i % 64));
        }
}

uint32_t ospd_tick_round(struct osp_ring_header *h, uint8_t *slots, uint32_t slot_count,
                         uint32_t slot_ring_size, uint64_t *watch)
{
    uint32_t running = 0;
    if (slots != NULL) {
        ospd_watch_take(h, watch);
        uint32_t used = osp_slots_in_use(h, slot_count);
        for (uint32_t w = 0; w < OSP_ATTENTION_WORDS; w++)
            for (uint64_t bits = watch[w]; bits != 0; bits &= bits - 1) {
                uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
                if (i >= used)
                    break;
                struct osp_slot *s = osp_slot_at(slots, slot_ring_size, i);
                if (atomic_load_explicit(&s->state, memory_order_relaxed) == OSP_SLOT_RUNNING)
                    running++;
            }
    }
    /* Release: a shim that sees the round counted knows ospreyd has looked at its slots. */
    atomic_fetch_add_explicit(&h->tick_seq, 1, memory_order_release);
    return running;
}

bool ospd_nap_begin(struct osp_ring_header *h, uint64_t data_size, uint8_t *slots,
                    uint32_t slot_count, uint32_t slot_ring_size, uint64_t *watch)
{
    uint32_t awake = OSP_AWAKE;
    /* Seq_cst: before the fills below, against the producers' fence between their head
     * store and their load of napping. Not over OSP_NAP_REFUSED: a wake failed once. */
    if (!atomic_compare_exchange_strong_explicit(&h->napping, &awake, OSP_NAPPING,
                                                 memory_order_seq_cst, memory_order_relaxed) &&
        awake != OSP_NAPPING)
        return false;
    bool past =
        osp_ring_past_mark(osp_ring_load_head_acquire(h), osp_ring_load_tail_own(h), data_size);
    if (slots != NULL && !past) {
        ospd_watch_take(h, watch);
        uint32_t used = osp_slots_in_use(h, slot_count);
        for (uint32_t w = 0; w < OSP_ATTENTION_WORDS && !past; w++)
            for (uint64_t bits = watch[w]; bits != 0 && !past; bits &= bits - 1) {
                uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
                if (i >= used)
                    break;
                struct osp_slot *s = osp_slot_at(slots, slot_ring_size, i);
                past = osp_ring_past_mark(osp_index_load_acquire(&s->head),
                                          osp_index_load_own(&s->tail), slot_ring_size);
            }
    }
    if (past)
        ospd_nap_end(h);
    return !past;
}

void ospd_nap_end(struct osp_ring_header *h)
{
    uint32_t napping = OSP_NAPPING;
    atomic_compare_exchange_strong_explicit(&h->napping, &napping, OSP_AWAKE, memory_order_relaxed,
                                            memory_order_relaxed);
}
