/* waits.c — waits timed from the kernel's context-switch records, with the shim's sites.
 *
 * Owns turning two streams into WAITING samples (proto/osp_ring.h, "Waits from the kernel"):
 * the kernel's switches of each thread (out, blocked or preempted; in), exact to the
 * nanosecond, and the shim's wait spans (OSP_REC_WAIT_SPAN), which say where a thread was
 * waiting over a stretch of time. Nothing here touches the system: switch-source.c feeds the
 * switches, collect.c the spans, and the tests drive both by hand.
 *
 * DESIGN. A block is the time from a switch out that is not a preemption to the next switch
 * in. Its site is the span that started last among the spans that overlap it: a span that
 * starts inside the block is a capture made during it (the handler found the thread there);
 * one that covers it from before is the site the thread was last seen waiting at (a guarded
 * call's span is the call itself). A block no span overlaps (too short for any signal to
 * have landed in it) takes the site of the span before it, else the thread's last on-CPU
 * stack. The handler's own wake-up in the middle of a wait (a switch in, then out, around an
 * instant the shim reported as a capture, within MERGE_GAP_NS) does not end the wait. A block
 * waits for its site until a span ending after it has arrived, or STALE_NS. A thread asked
 * for its site and found at the same one again and again is asked less often (every 16th
 * block at most, and any block once it has lasted STREAK_NS), so a pool of threads waking at
 * one site costs few signals; the blocks not asked about take that site. Time is paid as
 * WAITING periods by a credit, as the shim pays CPU time: blocks shorter than a period add up
 * to the periods they make, so a thread's waiting total is exact to half a period. Preempted
 * time (runnable, not on a CPU) is counted apart, per thread.
 */
#include <stdlib.h>
#include <string.h>

#include "ospd.h"

#define MERGE_GAP_NS 2000000ull   /* the handler's own wake-up is shorter than this */
#define STALE_NS     250000000ull /* a block waits at most this long for its site */
#define MAX_PENDING  4096u        /* blocks (and spans) kept per thread before forcing */
#define STREAK_NS    200000000ull /* a block this old is asked about whatever the streak */

static struct ospd_wait_thread *thread_of(struct ospd_collector *c, uint32_t i)
{
    struct ospd_waits *w = &c->waits;
    if (i >= c->thread_count)
        return NULL;
    if (i >= w->cap) {
        uint64_t cap = w->cap;
        if (ospd_grow((void **)&w->by_thread, &cap, (uint64_t)i + 1, sizeof *w->by_thread) != 0)
            return NULL;
        memset(w->by_thread + w->cap, 0, (size_t)(cap - w->cap) * sizeof *w->by_thread);
        for (uint64_t j = w->cap; j < cap; j++)
            w->by_thread[j].last_stack = w->by_thread[j].last_capture = -1;
        w->cap = (uint32_t)cap;
    }
    return &w->by_thread[i];
}

static uint32_t tid_hash(int32_t tid, uint32_t cap)
{
    return ((uint32_t)tid * 2654435761u) & (cap - 1);
}

static void tid_put(struct ospd_waits *w, const struct ospd_thread *threads, int32_t tid,
                    uint32_t thread)
{
    uint32_t i = tid_hash(tid, w->tid_cap);
    while (w->tid_slots[i] != 0 && threads[w->tid_slots[i] - 1].tid != tid)
        i = (i + 1) & (w->tid_cap - 1);
    w->tid_slots[i] = thread + 1;
}

static int64_t thread_by_tid(const struct ospd_collector *c, int32_t tid)
{
    const struct ospd_waits *w = &c->waits;
    if (w->tid_cap == 0)
        return -1;
    for (uint32_t i = tid_hash(tid, w->tid_cap); w->tid_slots[i] != 0;
         i = (i + 1) & (w->tid_cap - 1))
        if (c->threads[w->tid_slots[i] - 1].tid == tid)
            return (int64_t)w->tid_slots[i] - 1;
    return -1;
}

void ospd_waits_thread_started(struct ospd_collector *c, uint32_t thread)
{
    struct ospd_waits *w = &c->waits;
    struct ospd_wait_thread *wt = thread_of(c, thread);
    if (wt == NULL)
        return;
    wt->tid = c->threads[thread].tid;
    wt->from_ns = w->registered_of != NULL ? w->registered_of(w->capture_ctx, thread) : 0;
    if ((thread + 1) * 2 > w->tid_cap) { /* keep the table at most half full */
        uint32_t cap = w->tid_cap ? w->tid_cap * 2 : 64;
        while ((thread + 1) * 2 > cap)
            cap *= 2;
        uint32_t *slots = calloc(cap, sizeof *slots);
        if (slots == NULL)
            return;
        uint32_t *old = w->tid_slots;
        uint32_t old_cap = w->tid_cap;
        w->tid_slots = slots;
        w->tid_cap = cap;
        for (uint32_t i = 0; i < old_cap; i++)
            if (old[i] != 0)
                tid_put(w, c->threads, c->threads[old[i] - 1].tid, old[i] - 1);
        free(old);
    }
    tid_put(w, c->threads, wt->tid, thread);
}

void ospd_waits_thread_ended(struct ospd_collector *c, uint32_t thread)
{
    struct ospd_wait_thread *wt = thread_of(c, thread);
    if (wt == NULL)
        return;
    /* Its switches may still be on their way (read after the record that ended it); only
     * the block its exit opens is not a wait: that one is never closed (see resolve). */
    wt->ended = true;
}

static uint64_t period_ns(const struct ospd_collector *c)
{
    return 1000000000u / (c->rate_hz ? c->rate_hz : 997u);
}

/* The thread's last on-CPU stack, while its registration is the slot's. */
static int64_t last_cpu_stack(const struct ospd_collector *c, uint32_t thread)
{
    const struct ospd_thread *t = &c->threads[thread];
    if (t->slot >= c->slots_cap || !c->slots[t->slot].used ||
        c->slots[t->slot].generation != t->generation)
        return -1;
    return c->slots[t->slot].last_stack;
}

/* The program's end on the monotonic clock, once its exit record has come; else UINT64_MAX. */
static uint64_t exit_mono_ns(const struct ospd_collector *c)
{
    if (!c->exit_seen || c->end_unix_ns <= c->start_unix_ns)
        return UINT64_MAX;
    return c->start_mono_ns + (c->end_unix_ns - c->start_unix_ns);
}

static void pay(struct ospd_collector *c, uint32_t thread, struct ospd_wait_thread *wt,
                const struct ospd_wait_block *b, int64_t stack)
{
    /* Waits end when the program did, at its exit record: a block after it is the shim
     * waiting for its collector (the exit's naps) or the process gone, and with no span after
     * it took the site of the span before (a forked sleeper of 0.326 s waited 0.370 s at its
     * nanosleep, 44 ms of them naps after its exit, beside two CPU hogs). */
    uint64_t exit_ns = exit_mono_ns(c);
    if (b->start_ns >= exit_ns)
        return;
    uint64_t len = (b->end_ns < exit_ns ? b->end_ns : exit_ns) - b->start_ns;
    uint64_t period = period_ns(c);
    wt->waited_ns += len;
    wt->credit_ns += (int64_t)len;
    if (wt->credit_ns < (int64_t)(period / 2))
        return;
    uint64_t weight = ((uint64_t)wt->credit_ns + period / 2) / period;
    wt->credit_ns -= (int64_t)(weight * period);
    if (weight > UINT32_MAX)
        weight = UINT32_MAX;
    if (stack < 0)
        stack = last_cpu_stack(c, thread);
    if (stack < 0) {
        c->waits.unattributed += weight;
        return;
    }
    ospd_collect_add(c, b->start_ns, thread, (uint32_t)stack, OSP_STATE_WAITING, (uint32_t)weight);
}

/* The site of block b: the latest-starting span overlapping it, else the last span before
 * it, else the thread's last known site. */
static int64_t site_of(const struct ospd_wait_thread *wt, const struct ospd_wait_block *b)
{
    int64_t best = -1, before = -1;
    uint64_t best_start = 0, before_end = 0;
    for (uint32_t j = 0; j < wt->span_count; j++) {
        const struct ospd_wait_span *sp = &wt->spans[j];
        /* A capture's instant (a span of no length) falls in the block, or a span overlaps it. */
        bool instant = sp->end_ns == sp->start_ns && sp->start_ns >= b->start_ns;
        if (sp->start_ns < b->end_ns && (sp->end_ns > b->start_ns || instant)) {
            if (best < 0 || sp->start_ns >= best_start) {
                best = sp->stack;
                best_start = sp->start_ns;
            }
        } else if (sp->end_ns <= b->start_ns && (before < 0 || sp->end_ns >= before_end)) {
            before = sp->stack;
            before_end = sp->end_ns;
        }
    }
    if (best >= 0)
        return best;
    /* Not asked, as the thread was found at one site again and again: that site. */
    if (wt->site_streak > 0 && wt->last_capture >= 0)
        return wt->last_capture;
    return before >= 0 ? before : wt->last_stack;
}

/* `keep`: at most this many blocks stay pending (the oldest beyond it are resolved now). */
static void resolve_thread(struct ospd_collector *c, uint32_t thread, struct ospd_wait_thread *wt,
                           uint64_t now, bool final, uint32_t keep)
{
    uint32_t done = 0;
    for (; done < wt->block_count; done++) {
        const struct ospd_wait_block *b = &wt->blocks[done];
        bool ready = final || b->end_ns <= wt->span_horizon || now > b->end_ns + STALE_NS ||
                     wt->block_count - done > keep;
        if (!ready)
            break;
        int64_t stack = site_of(wt, b);
        if (stack >= 0)
            wt->last_stack = stack;
        pay(c, thread, wt, b, stack);
    }
    if (done > 0) {
        memmove(wt->blocks, wt->blocks + done, (wt->block_count - done) * sizeof *wt->blocks);
        wt->block_count -= done;
    }
    /* Spans wholly before the oldest block still waiting are done with (their site is kept
     * in last_stack); the last one stays, for the short blocks right after it. */
    uint64_t keep_from = wt->block_count > 0 ? wt->blocks[0].start_ns : UINT64_MAX;
    uint32_t drop = 0;
    while (drop + 1 < wt->span_count &&
           (wt->spans[drop].end_ns <= keep_from || wt->span_count - drop > MAX_PENDING))
        drop++;
    if (drop > 0) {
        memmove(wt->spans, wt->spans + drop, (wt->span_count - drop) * sizeof *wt->spans);
        wt->span_count -= drop;
    }
}

static void finish_block(struct ospd_collector *c, uint32_t thread, struct ospd_wait_thread *wt,
                         uint64_t start, uint64_t end)
{
    if (end <= start)
        return;
    if (wt->block_count == wt->blocks_cap) {
        uint64_t cap = wt->blocks_cap;
        if (ospd_grow((void **)&wt->blocks, &cap, (uint64_t)wt->block_count + 1,
                      sizeof *wt->blocks) != 0) {
            struct ospd_wait_block b = {start, end};
            pay(c, thread, wt, &b, site_of(wt, &b)); /* no room to wait for a site */
            return;
        }
        wt->blocks_cap = (uint32_t)cap;
    }
    wt->blocks[wt->block_count++] = (struct ospd_wait_block){start, end};
    c->waits.blocks++;
    /* Too many waiting for their sites: the oldest quarter goes at once. One at a time, each
     * new block cost a memmove of all the others (64 KiB), 40,000 times a second for a client
     * blocking that often. */
    if (wt->block_count > MAX_PENDING)
        resolve_thread(c, thread, wt, end, false, MAX_PENDING * 3 / 4);
}

/* Did the shim's handler find the thread blocked within [from, to]? The slot says when it
 * last did; the captures it reported say when it did before (the slot's may be newer by the
 * time ospreyd reads a late record). */
static bool captured_in(const struct ospd_waits *w, const struct ospd_wait_thread *wt,
                        uint32_t thread, uint64_t from, uint64_t to)
{
    uint64_t live = w->capture_of != NULL ? w->capture_of(w->capture_ctx, thread) : 0;
    if (live >= from && live <= to)
        return true;
    for (int i = 0; i < 8; i++)
        if (wt->captures[i] >= from && wt->captures[i] <= to)
            return true;
    return false;
}

void ospd_waits_switch(struct ospd_collector *c, int32_t tid, uint64_t t_ns, bool out,
                       bool preempted)
{
    struct ospd_waits *w = &c->waits;
    if (w->since_ns == 0)
        return;
    int64_t found = thread_by_tid(c, tid);
    if (found < 0)
        return;
    uint32_t thread = (uint32_t)found;
    struct ospd_wait_thread *wt = thread_of(c, thread);
    /* Before its registration the tid was the shim's, starting (the main thread's vfork of
     * ospreyd and its reap, a later image's greeting), not the program's: no wait of its. */
    if (wt == NULL || t_ns < wt->from_ns)
        return;
    if (!out) {
        if (wt->state == OSPD_KSTATE_BLOCKED) {
            wt->tentative = true; /* it may be only our handler's wake-up */
            wt->tentative_end = t_ns;
            wt->tentative_run_ns = 0;
        } else if (wt->state == OSPD_KSTATE_PREEMPTED && t_ns > wt->since_ns) {
            wt->preempted_ns += t_ns - wt->since_ns;
        }
        wt->state = OSPD_KSTATE_RUNNING;
        wt->since_ns = t_ns;
        return;
    }
    /* The running time of a wake-up that may be our handler's: a loaded machine may preempt
     * it (and keep it waiting for a CPU for long) in the middle. */
    uint64_t ran =
        wt->tentative_run_ns +
        (wt->state == OSPD_KSTATE_RUNNING && t_ns > wt->since_ns ? t_ns - wt->since_ns : 0);
    if (wt->tentative && preempted && ran <= MERGE_GAP_NS) {
        /* Preempted in the middle of our handler's wake-up, perhaps: still undecided. */
        wt->tentative_run_ns = ran;
        wt->state = OSPD_KSTATE_PREEMPTED;
        wt->since_ns = t_ns;
        return;
    }
    if (wt->tentative) {
        wt->tentative = false;
        if (!preempted && wt->state == OSPD_KSTATE_RUNNING && ran <= MERGE_GAP_NS &&
            captured_in(w, wt, thread, wt->tentative_end, t_ns)) {
            wt->state = OSPD_KSTATE_BLOCKED; /* the same wait goes on */
            wt->since_ns = t_ns;
            return;
        }
        finish_block(c, thread, wt, wt->block_start, wt->tentative_end);
    } else if (wt->state == OSPD_KSTATE_BLOCKED) {
        finish_block(c, thread, wt, wt->block_start, t_ns); /* a lost switch in */
    }
    wt->state = preempted ? OSPD_KSTATE_PREEMPTED : OSPD_KSTATE_BLOCKED;
    wt->since_ns = t_ns;
    if (!preempted) {
        wt->block_start = t_ns;
        wt->since_asked++;
    }
}

void ospd_waits_span(struct ospd_collector *c, uint32_t thread, uint64_t start_ns, uint64_t end_ns,
                     uint32_t flags, uint32_t stack)
{
    struct ospd_wait_thread *wt = thread_of(c, thread);
    if (wt == NULL || end_ns < start_ns)
        return;
    if (wt->span_count == wt->spans_cap) {
        uint64_t cap = wt->spans_cap;
        if (ospd_grow((void **)&wt->spans, &cap, (uint64_t)wt->span_count + 1, sizeof *wt->spans) !=
            0)
            return;
        wt->spans_cap = (uint32_t)cap;
    }
    wt->spans[wt->span_count++] = (struct ospd_wait_span){
        .start_ns = start_ns, .end_ns = end_ns, .stack = stack, .flags = flags};
    if ((flags & OSP_SPAN_CAPTURED_START) && end_ns == start_ns) { /* a capture, as it happened */
        wt->captures[wt->capture_next++ % 8] = start_ns;
        /* Captures in one block (a re-look while rows were being built) are one finding. */
        uint64_t block = wt->state == OSPD_KSTATE_BLOCKED && start_ns >= wt->block_start
                             ? wt->block_start
                             : start_ns;
        if (block != wt->streak_block || (int64_t)stack != wt->last_capture)
            wt->site_streak = (int64_t)stack == wt->last_capture
                                  ? (wt->site_streak < 4 ? wt->site_streak + 1 : 4)
                                  : 0;
        wt->streak_block = block;
        wt->last_capture = stack;
    }
    if (end_ns > wt->span_horizon)
        wt->span_horizon = end_ns;
    if (c->waits.since_ns == 0)
        wt->last_stack = stack;
}

void ospd_waits_resolve(struct ospd_collector *c, uint64_t now_ns, bool final)
{
    struct ospd_waits *w = &c->waits;
    for (uint32_t i = 0; i < w->cap && i < c->thread_count; i++) {
        struct ospd_wait_thread *wt = &w->by_thread[i];
        /* A wake-up that ran longer than the handler's would, or stayed undecided a second
         * (preempted all along), was the program's. */
        uint64_t ran =
            wt->tentative_run_ns +
            (wt->state == OSPD_KSTATE_RUNNING && now_ns > wt->since_ns ? now_ns - wt->since_ns : 0);
        if (wt->tentative &&
            (final || ran > MERGE_GAP_NS || now_ns > wt->tentative_end + 1000000000u)) {
            wt->tentative = false;
            finish_block(c, i, wt, wt->block_start, wt->tentative_end);
        }
        if (final && wt->state == OSPD_KSTATE_BLOCKED) {
            if (!wt->ended) /* an ended thread's last block is its exit */
                finish_block(c, i, wt, wt->block_start, now_ns);
            wt->state = OSPD_KSTATE_UNKNOWN;
        }
        if (final && wt->state == OSPD_KSTATE_PREEMPTED && now_ns > wt->since_ns) {
            wt->preempted_ns += now_ns - wt->since_ns;
            wt->state = OSPD_KSTATE_UNKNOWN;
        }
        if (wt->block_count > 0)
            resolve_thread(c, i, wt, now_ns, final, MAX_PENDING);
    }
}

void ospd_waits_finish(struct ospd_collector *c, uint64_t now_ns)
{
    /* Waits end when the program did, at its exit record: a thread blocked after it is the
     * shim waiting for us, or the process gone, and a collector that came late (a forked
     * child's, on a loaded machine) made a sleeper of 0.3 s wait 0.655 s. (pay() leaves out
     * the blocks that ended in the meantime past it.) */
    uint64_t exit_mono = exit_mono_ns(c);
    if (exit_mono < now_ns)
        now_ns = exit_mono;
    ospd_waits_resolve(c, now_ns, true);
}

/* Thread i is blocked with no site of the shim's in its block and was not asked yet. */
static bool wants_site(const struct ospd_waits *w, uint32_t i, const struct ospd_wait_thread *wt)
{
    if (wt->state != OSPD_KSTATE_BLOCKED || wt->ended || wt->poked_for == wt->block_start)
        return false;
    uint64_t capture = w->capture_of != NULL ? w->capture_of(w->capture_ctx, i) : 0;
    return capture < wt->block_start; /* else the shim has its site already */
}

bool ospd_waits_asking_soon(const struct ospd_collector *c)
{
    const struct ospd_waits *w = &c->waits;
    for (uint32_t i = 0; i < w->cap && i < c->thread_count; i++) {
        const struct ospd_wait_thread *wt = &w->by_thread[i];
        /* Blocks waiting for the shim's spans (read from the thread's ring) or for their
         * wake-up to be decided, or a block whose site is still to be asked for. */
        if (wt->block_count > 0 || wt->tentative || wants_site(w, i, wt))
            return true;
    }
    return false;
}

void ospd_waits_to_ask(struct ospd_collector *c, uint64_t now_ns, uint64_t min_ns,
                       void (*ask)(void *ctx, uint32_t thread), void *ctx)
{
    struct ospd_waits *w = &c->waits;
    for (uint32_t i = 0; i < w->cap && i < c->thread_count; i++) {
        struct ospd_wait_thread *wt = &w->by_thread[i];
        if (wt->block_start + min_ns > now_ns || !wants_site(w, i, wt))
            continue;
        /* A thread found at one site several times running waits there again, most likely
         * (a pool's worker, a loop's timed wait): asked every 2nd, 4th ... 16th block only,
         * the others take the site of the span before them. Not a long wait: a 1.8 s wait
         * right after a 0.6 s one at another site (captured more than once: re-looks while
         * the unwind rows came) was not asked about, and took the first one's site whole. */
        if (wt->since_asked < (1u << wt->site_streak) && wt->block_start + STREAK_NS > now_ns)
            continue;
        wt->poked_for = wt->block_start;
        wt->since_asked = 0;
        w->asked++;
        ask(ctx, i);
    }
}

void ospd_waits_free(struct ospd_waits *w)
{
    for (uint32_t i = 0; i < w->cap; i++) {
        free(w->by_thread[i].blocks);
        free(w->by_thread[i].spans);
    }
    free(w->by_thread);
    free(w->tid_slots);
    memset(w, 0, sizeof *w);
}
