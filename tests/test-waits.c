/* test-waits.c — daemon/waits.c driven by hand: the kernel's switches of a thread and the
 * shim's wait spans in, WAITING samples out. Each case is a timeline a real program makes
 * (a guarded call, a capture inside a long wait, the handler's own wake-up, a client blocking
 * tens of thousands of times a second, a process's end) and checks what a user reads in the
 * profile: each wait's time at its own site, exact to half a period.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "ospd.h"
#include "suite.h"

#define MS 1000000ull
#define US 1000ull

/* A collector timing waits from the kernel's records, at 1000 Hz (a period of 1 ms), with
 * `n` registered threads of tids 100, 101, ... */
static void setup(struct ospd_collector *c, uint32_t n)
{
    ospd_collector_init(c);
    c->rate_hz = 1000;
    c->waits.since_ns = 1;
    c->threads = calloc(n, sizeof *c->threads);
    ck_assert_ptr_nonnull(c->threads);
    c->thread_count = c->threads_cap = n;
    for (uint32_t i = 0; i < n; i++) {
        c->threads[i].tid = (int32_t)(100 + i);
        c->threads[i].slot = UINT32_MAX; /* no slot: no on-CPU stack to fall back on */
        ospd_waits_thread_started(c, i);
    }
}

/* WAITING periods recorded for `thread` at `stack` (-1: at any). */
static uint64_t waited(const struct ospd_collector *c, uint32_t thread, int64_t stack)
{
    uint64_t periods = 0;
    for (uint64_t i = 0; i < c->sample_count; i++) {
        const struct ospd_sample *s = &c->samples[i];
        if (s->thread == thread && (s->stack_state & 1u) == OSP_STATE_WAITING &&
            (stack < 0 || (int64_t)(s->stack_state >> 1) == stack))
            periods += s->weight;
    }
    return periods;
}

static void block(struct ospd_collector *c, int32_t tid, uint64_t from, uint64_t to)
{
    ospd_waits_switch(c, tid, from, true, false);
    ospd_waits_switch(c, tid, to, false, false);
}

/* The shim's handler found thread `thread` blocked at `t` and took its stack `stack`. */
static void capture(struct ospd_collector *c, uint32_t thread, uint64_t t, uint32_t stack)
{
    ospd_waits_span(c, thread, t, t, OSP_SPAN_CAPTURED_START, stack);
}

/* The collector of each test (a checked fixture): one thread, or two (case "two"). */
static struct ospd_collector c;
static void one_thread(void)
{
    setup(&c, 1);
}
static void two_threads(void)
{
    setup(&c, 2);
}
static void collector_free(void)
{
    ospd_collector_free(&c);
}

START_TEST(each_block_at_the_span_over_it)
{
    /* A guarded call (its span covers the block), then a wait the handler captured. */
    ospd_waits_span(&c, 0, 9 * MS, 31 * MS, OSP_SPAN_GUARDED, 5);
    block(&c, 100, 10 * MS, 30 * MS);
    block(&c, 100, 40 * MS, 52 * MS);
    capture(&c, 0, 43 * MS, 7);
    ospd_waits_resolve(&c, 60 * MS, true);
    ck_assert_uint_eq(waited(&c, 0, 5), 20);
    ck_assert_uint_eq(waited(&c, 0, 7), 12);
    ck_assert_uint_eq(c.waits.blocks, 2);
    ck_assert_uint_eq(c.waits.unattributed, 0);
}
END_TEST

START_TEST(the_handlers_wake_up_does_not_end_a_wait)
{
    ospd_waits_switch(&c, 100, 10 * MS, true, false);
    /* Our signal wakes it at 20 ms; the handler captures its stack and it sleeps again. */
    ospd_waits_switch(&c, 100, 20 * MS, false, false);
    capture(&c, 0, 20 * MS + 30 * US, 3);
    ospd_waits_switch(&c, 100, 20 * MS + 60 * US, true, false);
    ospd_waits_switch(&c, 100, 50 * MS, false, false);
    ospd_waits_resolve(&c, 60 * MS, true);
    ck_assert_uint_eq(c.waits.blocks, 1);
    ck_assert_uint_eq(waited(&c, 0, 3), 40);
}
END_TEST

START_TEST(a_wake_up_of_the_programs_own_ends_it)
{
    capture(&c, 0, 10 * MS, 3);
    block(&c, 100, 9 * MS, 20 * MS);
    /* It runs 5 ms (longer than a handler's wake-up), then waits somewhere else. */
    ospd_waits_switch(&c, 100, 25 * MS, true, false);
    capture(&c, 0, 26 * MS, 4);
    ospd_waits_switch(&c, 100, 45 * MS, false, false);
    ospd_waits_resolve(&c, 60 * MS, true);
    ck_assert_uint_eq(c.waits.blocks, 2);
    ck_assert_uint_eq(waited(&c, 0, 3), 11);
    ck_assert_uint_eq(waited(&c, 0, 4), 20);
}
END_TEST

START_TEST(preempted_time_is_no_wait)
{
    ospd_waits_switch(&c, 100, 10 * MS, true, true);
    ospd_waits_switch(&c, 100, 30 * MS, false, false);
    ospd_waits_resolve(&c, 40 * MS, true);
    ck_assert_uint_eq(waited(&c, 0, -1), 0);
    ck_assert_uint_eq(c.waits.by_thread[0].preempted_ns, 20 * MS);
}
END_TEST

/* A client blocking 40,000 times a second for 25 us each, its site known from one guarded
 * call's span only now and then: 20,000 blocks, more than are kept waiting for their sites. */
START_TEST(short_blocks_add_up_and_stay_bounded)
{
    ospd_waits_span(&c, 0, 0, 1 * MS, OSP_SPAN_GUARDED, 9);
    uint64_t t = 2 * MS, truth = 0;
    uint32_t most = 0;
    for (int i = 0; i < 20000; i++) {
        block(&c, 100, t, t + 25 * US);
        truth += 25 * US;
        t += 25 * US + 5 * US;
        if (c.waits.by_thread[0].block_count > most)
            most = c.waits.by_thread[0].block_count;
        if (i % 1000 == 999)
            ospd_waits_resolve(&c, t, false); /* a tick: no span ends after these blocks */
    }
    ospd_waits_resolve(&c, t, true);
    ck_assert_uint_eq(c.waits.blocks, 20000);
    ck_assert_uint_le(most, 4096 + 1);
    /* 0.5 s of waiting: 500 periods, within half a period, all at the one site known. */
    ck_assert_uint_eq(waited(&c, 0, 9), (truth + MS / 2) / MS);
    ck_assert_uint_eq(waited(&c, 0, -1), waited(&c, 0, 9));
}
END_TEST

static uint32_t asked[4];
static void ask(void *ctx, uint32_t thread)
{
    (void)ctx;
    asked[thread]++;
}

/* A pool's worker found at one site again and again is asked less often; a long wait is
 * asked about whatever the streak (a 1.8 s wait after several 0.6 s ones at another site
 * once took theirs). */
START_TEST(a_streak_asks_less_but_a_long_wait_is_asked)
{
    uint64_t t = 10 * MS;
    for (int i = 0; i < 6; i++) { /* six waits, each captured at the same site */
        ospd_waits_switch(&c, 100, t, true, false);
        capture(&c, 0, t + 2 * MS, 2);
        ospd_waits_switch(&c, 100, t + 5 * MS, false, false);
        t += 10 * MS;
    }
    ck_assert_uint_gt(c.waits.by_thread[0].site_streak, 0);
    /* A new block, 5 ms old: not asked (the streak). */
    ospd_waits_switch(&c, 100, t, true, false);
    asked[0] = 0;
    ospd_waits_to_ask(&c, t + 5 * MS, MS, ask, NULL);
    ck_assert_uint_eq(asked[0], 0);
    /* The same block 300 ms on: asked, once. */
    ospd_waits_to_ask(&c, t + 300 * MS, MS, ask, NULL);
    ck_assert_uint_eq(asked[0], 1);
    ospd_waits_to_ask(&c, t + 400 * MS, MS, ask, NULL);
    ck_assert_uint_eq(asked[0], 1);
}
END_TEST

START_TEST(two_threads_keep_their_own_waits)
{
    ospd_waits_span(&c, 0, 0, 100 * MS, OSP_SPAN_GUARDED, 1);
    ospd_waits_span(&c, 1, 0, 100 * MS, OSP_SPAN_GUARDED, 2);
    block(&c, 100, 10 * MS, 40 * MS);
    block(&c, 101, 20 * MS, 30 * MS);
    ospd_waits_resolve(&c, 200 * MS, true);
    ck_assert_uint_eq(waited(&c, 0, 1), 30);
    ck_assert_uint_eq(waited(&c, 1, 2), 10);
    ck_assert_uint_eq(waited(&c, 0, 2) + waited(&c, 1, 1), 0);
}
END_TEST

/* A forked child sleeps 30 ms and exits; its collector, late on a loaded machine, finishes
 * 400 ms after: the process's last block (its death) is no wait, nor is anything after its
 * exit record; a wait open at the exit lasts until it. */
START_TEST(waits_end_at_the_exit_record)
{
    c.start_mono_ns = 5 * MS;
    c.start_unix_ns = 1000000 * MS; /* the realtime clock, the same instant */
    ospd_waits_span(&c, 0, 10 * MS, 40 * MS, OSP_SPAN_GUARDED, 1);
    block(&c, 100, 10 * MS, 40 * MS);
    capture(&c, 1, 20 * MS, 2);
    ospd_waits_switch(&c, 101, 15 * MS, true, false); /* still blocked at the exit */
    c.exit_seen = true;
    c.end_unix_ns = c.start_unix_ns + 45 * MS;                  /* the exit record, at 50 ms */
    ospd_waits_switch(&c, 100, 50 * MS + 10 * US, true, false); /* the process ends */
    ospd_waits_finish(&c, 450 * MS);
    ck_assert_uint_eq(waited(&c, 0, 1), 30);
    ck_assert_uint_eq(waited(&c, 0, -1), 30);
    ck_assert_uint_eq(waited(&c, 1, 2), 35);
}
END_TEST

/* A forked child sleeps 300 ms, its exit record written at 312 ms; then the shim waits for its
 * collector in naps (the exit's handshake, 44 ms of them beside two CPU hogs): the naps are no
 * wait of the program's, though no span after them says where they were (they would take the
 * sleep's site: a sleeper of 0.326 s waited 0.370 s at its nanosleep once). */
START_TEST(naps_after_the_exit_record_are_no_wait)
{
    c.start_mono_ns = 0;
    c.start_unix_ns = 1000000 * MS;
    ospd_waits_span(&c, 0, 10 * MS, 310 * MS, OSP_SPAN_GUARDED, 1);
    block(&c, 100, 10 * MS, 310 * MS);
    c.exit_seen = true;
    c.end_unix_ns = c.start_unix_ns + 312 * MS;
    for (uint64_t t = 311 * MS; t < 355 * MS; t += 2 * MS)
        block(&c, 100, t, t + 1 * MS + 500 * US); /* the first straddles the exit record */
    ospd_waits_resolve(&c, 340 * MS, false);
    ospd_waits_finish(&c, 400 * MS);
    ck_assert_uint_eq(waited(&c, 0, 1), 301); /* the sleep, and the nap begun before the exit */
    ck_assert_uint_eq(waited(&c, 0, -1), 301);
}
END_TEST

/* Where perf_event_open was refused, the profile says what refused it. */
START_TEST(what_refused_the_switch_records)
{
    const int64_t none = 0, perfmon = INT64_C(1) << 38, sys_admin = INT64_C(1) << 21;
    /* Debian's perf_event_paranoid 3 refuses a user, filter or not (and must change first). */
    ck_assert_str_eq(ospd_refused_by(EACCES, 3, 0, none), "perf_event_paranoid");
    ck_assert_str_eq(ospd_refused_by(EACCES, 4, 2, none), "perf_event_paranoid");
    /* Where the setting allows the process its own events, the filter refused them. */
    ck_assert_str_eq(ospd_refused_by(EACCES, 2, 2, none), "seccomp");
    ck_assert_str_eq(ospd_refused_by(EPERM, 3, 2, perfmon), "seccomp");
    ck_assert_str_eq(ospd_refused_by(EACCES, 3, 2, sys_admin), "seccomp");
    ck_assert_str_eq(ospd_refused_by(EACCES, INT32_MIN, 2, -1), "seccomp");
    /* Neither (a security module), or a kernel without perf events. */
    ck_assert_str_eq(ospd_refused_by(EACCES, 2, 0, none), "kernel");
    ck_assert_str_eq(ospd_refused_by(ENOSYS, 3, 2, none), "kernel");
    ck_assert_str_eq(ospd_refused_by(ENOENT, 1, 0, none), "kernel");
}
END_TEST

/* The main thread's tid, before it registered, was the shim's own start: its vfork of ospreyd
 * and the reap of that short-lived child blocked it (0.10-0.30 s beside 8 busy loops on 2
 * cores), and those blocks, with no span before them, went to whatever stack came next or to
 * none. A thread's waits count from its registration. */
static uint64_t registered_at_50_ms(void *ctx, uint32_t thread)
{
    (void)ctx;
    (void)thread;
    return 50 * MS;
}
START_TEST(the_shims_start_before_the_registration_is_no_wait)
{
    c.waits.registered_of = registered_at_50_ms;
    ospd_waits_thread_started(&c, 0);
    block(&c, 100, 10 * MS, 40 * MS); /* the vfork of ospreyd */
    block(&c, 100, 41 * MS, 48 * MS); /* the reap of its child */
    ospd_waits_switch(&c, 100, 49 * MS, true, true);
    ospd_waits_switch(&c, 100, 49 * MS + 200 * US, false, false);
    /* Registered at 50 ms; the program's first wait, a guarded call. */
    ospd_waits_span(&c, 0, 60 * MS, 80 * MS, OSP_SPAN_GUARDED, 5);
    block(&c, 100, 61 * MS, 79 * MS);
    ospd_waits_resolve(&c, 100 * MS, true);
    ck_assert_uint_eq(waited(&c, 0, 5), 18);
    ck_assert_uint_eq(waited(&c, 0, -1), 18);
    ck_assert_uint_eq(c.waits.by_thread[0].waited_ns, 18 * MS);
    ck_assert_uint_eq(c.waits.by_thread[0].preempted_ns, 0);
    ck_assert_uint_eq(c.waits.unattributed, 0);
}
END_TEST

Suite *waits_suite(void)
{
    Suite *s = suite_create("waits");
    TCase *one = SUITE_CASE(
        s, "waits", 0, each_block_at_the_span_over_it, the_handlers_wake_up_does_not_end_a_wait,
        a_wake_up_of_the_programs_own_ends_it, preempted_time_is_no_wait,
        short_blocks_add_up_and_stay_bounded, a_streak_asks_less_but_a_long_wait_is_asked,
        what_refused_the_switch_records, naps_after_the_exit_record_are_no_wait,
        the_shims_start_before_the_registration_is_no_wait);
    tcase_add_checked_fixture(one, one_thread, collector_free);
    TCase *two = SUITE_CASE(s, "two threads", 0, two_threads_keep_their_own_waits,
                            waits_end_at_the_exit_record);
    tcase_add_checked_fixture(two, two_threads, collector_free);
    return s;
}
