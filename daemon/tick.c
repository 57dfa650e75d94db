/* tick.c — one round of ospreyd's sampling tick: which threads of the target get a SIGPROF.
 *
 * Owns the signalling half of the collector: for every slot the shim has set up
 * (proto/osp_ring.h, "Slots"), the rule osp_slot_due (a running thread whose next sample is
 * due and that has no signal of ours in flight), the tagged signal itself
 * (rt_tgsigqueueinfo with SI_QUEUE and the shim's cookie, which its handler recognises), and
 * the round counter the shim waits on before execve. Nothing here is trusted beyond a value
 * handed to the kernel: a hostile slot can at most make us signal its own process.
 */
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* Who sends: read once, at the first round (after ospreyd has detached), not per signal. */
static struct {
    pid_t pid;
    uid_t uid;
} sender;

uint32_t ospd_signal_round(struct osp_ring_header *h, uint8_t *slots, uint32_t slot_count,
                           uint32_t slot_ring_size, int32_t pid, uint64_t cookie, uint64_t now,
                           uint64_t *watch)
{
    uint32_t running = 0;
    if (slots != NULL)
        ospd_watch_take(h, watch);
    /* Acquire: pairs with the shim's seq_cst increment before it waits for our rounds. */
    if (slots != NULL && atomic_load_explicit(&h->signals_paused, memory_order_acquire) == 0 &&
        atomic_load_explicit(&h->shim_state, memory_order_acquire) == OSP_SHIM_RUNNING) {
        uint32_t used = osp_slots_in_use(h, slot_count);
        if (sender.pid == 0) {
            sender.pid = getpid();
            sender.uid = getuid();
        }
        siginfo_t info; /* the same for every thread of the round */
        memset(&info, 0, sizeof info);
        info.si_signo = SIGPROF;
        info.si_code = SI_QUEUE;
        info.si_pid = sender.pid;
        info.si_uid = sender.uid;
        info.si_value.sival_ptr = (void *)(uintptr_t)cookie;
        for (uint32_t w = 0; w < OSP_ATTENTION_WORDS; w++)
            for (uint64_t bits = watch[w]; bits != 0; bits &= bits - 1) {
                uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
                if (i >= used)
                    break;
                struct osp_slot *s = osp_slot_at(slots, slot_ring_size, i);
                if (atomic_load_explicit(&s->state, memory_order_relaxed) == OSP_SLOT_RUNNING)
                    running++;
                if (!osp_slot_due(s, now))
                    continue;
                int32_t tid = atomic_load_explicit(&s->tid, memory_order_relaxed);
                if (tid <= 0 ||
                    syscall(SYS_rt_tgsigqueueinfo, (pid_t)pid, (pid_t)tid, SIGPROF, &info) != 0)
                    continue; /* gone (ESRCH): its end record is on its way */
                atomic_store_explicit(&s->last_signal_ns, now, memory_order_relaxed);
                atomic_fetch_add_explicit(&s->signals_sent, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&h->signals_sent, 1, memory_order_relaxed);
            }
    }
    /* Release: a shim that sees the round counted sees no signal of it still to come. */
    atomic_fetch_add_explicit(&h->tick_seq, 1, memory_order_release);
    return running;
}
