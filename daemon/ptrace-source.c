/* ptrace-source.c — the attach's sampler where the kernel refuses perf events (a seccomp
 * filter, as container runtimes install, or kernel.perf_event_paranoid 3): the target sampled
 * from outside with ptrace, as py-spy does, at OSPD_PTRACE_MAX_HZ rounds a second at most; and,
 * for both samplers, the stack of a thread that stays blocked, read where it blocks.
 *
 * DESIGN. Each round reads every thread of /proc/PID/task: its state and user and system ticks
 * (stat), its CPU time and run-queue delay (schedstat). The CPU time a thread used since the
 * last round is its credit, paid in periods of 1 / rate as on-CPU samples when the thread is
 * found running (state R, and its CPU time moved since the last round): then it is seized
 * (PTRACE_SEIZE, which stops nothing), stopped (PTRACE_INTERRUPT), its registers read
 * (PTRACE_GETREGSET), the top of its stack copied (process_vm_readv, at most OSPD_PERF_STACK_BYTES
 * from sp, as the kernel copies one into a perf sample) and it is let go at once (PTRACE_DETACH):
 * between rounds nothing of ours is attached, so a signal sent to the program meanwhile is
 * delivered as without us, a new thread needs no following (the next round's scan finds it) and no
 * exit path of ospreyd can leave a thread stopped (a signal that came while one was stopped is
 * handed back by the detach). A thread found blocked is never stopped (a stop would interrupt its
 * system call): /proc/PID/task/TID/syscall gives the sp and pc it blocked at, its stack is copied
 * from there, and the time it spent blocked (the wall time less its CPU time and its run-queue
 * delay) is paid as waiting periods at that site; the site is read again only when the thread has
 * run since. Totals are exact, as the kernel's clocks are, whatever the rate: credit is never lost,
 * only paid late; at the end what is left is paid at the thread's last stack. A stop inside a
 * system call says where the thread waited more often than where its CPU went (it blocked, or was
 * woken, between our read of its state and its stop): the credit's kernel part (its system ticks'
 * share) is paid only at such stops, the rest only at stops in its own code (daemon/README.md).
 * Alternatives: staying attached (PTRACE_O_TRACECLONE for new threads) saves the seize and
 * detach of each sample but stops every thread at every signal the program gets until the
 * collector's loop lets it go (a timer signal at 1 kHz waits for our loop each time), and a
 * collector killed by SIGKILL leaves them to the kernel's detach; stopping blocked threads too
 * gives their frame pointer but interrupts their system calls (epoll_wait, futex waits with a
 * timeout return EINTR after a stop).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "osp_unwind_step.h"
#include "ospc.h"
#include "ospd_attach.h"
#include "ospd_perf_source.h"
#include "ospd_ptrace_source.h"

#define STOP_WAIT_MS 200u  /* a round waits this long at most for the threads to stop */
#define END_WAIT_MS  1000u /* the end, for a thread that has not stopped yet */

static void on_guard(int sig)
{
    (void)sig; /* only interrupts the wait for a stop (collect_stops) */
}

int ospd_ptrace_open(struct ospd_ptrace_source *s, int32_t pid, uint32_t rate_hz, bool stop_threads)
{
    memset(s, 0, sizeof *s);
    s->pid = pid;
    s->period_ns = 1000000000u / (rate_hz > 0 ? rate_hz : 1);
    s->stop_threads = stop_threads;
    s->stack = malloc(OSPD_PERF_STACK_BYTES);
    if (s->stack == NULL)
        return -ENOMEM;
    if (!stop_threads)
        return 0;
    /* The guard: a signal to this thread alone (the one that traces), whose handler does
     * nothing, so that the wait for a stop returns EINTR. */
    struct sigaction quiet = {.sa_handler = on_guard};
    sigemptyset(&quiet.sa_mask);
    sigaction(SIGALRM, &quiet, NULL);
    struct sigevent to_us = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGALRM};
    to_us._sigev_un._tid = (pid_t)syscall(SYS_gettid); /* sigev_notify_thread_id */
    if (timer_create(CLOCK_MONOTONIC, &to_us, &s->guard) != 0) {
        free(s->stack);
        s->stack = NULL;
        return -errno;
    }
    s->has_guard = true;
    return 0;
}

void ospd_ptrace_close(struct ospd_ptrace_source *s)
{
    /* A thread interrupted that had not stopped by the end (ospd_ptrace_end waited a second):
     * let go if it has stopped since; else the kernel lets it go when ospreyd exits. */
    for (uint32_t i = 0; i < s->count; i++) {
        int status;
        if (s->threads[i].interrupted &&
            waitpid(s->threads[i].tid, &status, __WALL | WNOHANG) == s->threads[i].tid &&
            WIFSTOPPED(status))
            ptrace(PTRACE_DETACH, s->threads[i].tid, NULL,
                   (void *)(uintptr_t)((status >> 16) == 0 ? WSTOPSIG(status) : 0));
    }
    if (s->has_guard)
        timer_delete(s->guard);
    s->has_guard = false;
    free(s->threads);
    free(s->stack);
    s->threads = NULL;
    s->stack = NULL;
    s->count = s->cap = 0;
}

/* The state letter of a thread (R, S, D, T, Z...), its user and system time in clock ticks
 * (stat), and its schedstat: CPU time and run-queue delay. 0, or -1 when the thread is gone. */
static int thread_status(int32_t pid, int32_t tid, char *state, uint64_t ticks[2], uint64_t *run_ns,
                         uint64_t *delay_ns)
{
    char path[96], text[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *close_paren = strrchr(text, ')'); /* the name may hold anything */
    if (close_paren == NULL || close_paren[1] != ' ')
        return -1;
    *state = close_paren[2];
    /* after the state: ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt */
    if (sscanf(close_paren + 3, "%*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %" SCNu64 " %" SCNu64,
               &ticks[0], &ticks[1]) != 2)
        return -1;
    snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
    f = fopen(path, "re");
    if (f == NULL)
        return -1;
    int ok = fscanf(f, "%" SCNu64 " %" SCNu64, run_ns, delay_ns) == 2;
    fclose(f);
    return ok ? 0 : -1;
}

/* Copy [sp, sp + OSPD_PERF_STACK_BYTES) of tid's stack, page by page, up to the first page that
 * cannot be read (the top of the stack). Returns the bytes copied. */
static uint64_t copy_stack(struct ospd_ptrace_source *s, int32_t tid, uint64_t sp)
{
    return ospd_read_stack(tid, sp, s->stack, OSPD_PERF_STACK_BYTES);
}

/* The frames a walk of OSP_MAX_DEPTH went through: its depth, plus those its marker says
 * were left out when it was folded. */
static uint64_t frames_walked(const uint64_t *pcs, uint32_t depth)
{
    const uint32_t marker = OSP_MAX_DEPTH - 1 - OSP_UNWIND_OUTER_FRAMES;
    if (depth == OSP_MAX_DEPTH && osp_unwind_left_out_is(pcs[marker]))
        return depth - 1 + osp_unwind_left_out_count(pcs[marker]);
    return depth;
}

/* A blocked thread's walk without its frame pointer, which /proc does not give: code built with
 * frame pointers describes its frames from it, so the walk is tried again from each word of
 * the copy's first 4 KiB that could be a frame record (the caller's saved frame pointer,
 * higher in the copy or 0, beside a return address), and the deepest walk is kept (the frames
 * it went through, a folded one's left out counted). */
static uint32_t walk_without_fp(struct ospd_ptrace_source *s, int32_t tid, uint64_t pc, uint64_t sp,
                                uint64_t *pcs, enum osp_unwind_stop *stop)
{
    struct ospd_stack_copy copy = {sp, s->stack, copy_stack(s, tid, sp)};
    uint32_t best =
        ospd_walk_copy_why(s->tables, s->tables_size, pc, sp, 0, &copy, pcs, OSP_MAX_DEPTH, stop);
    uint64_t best_frames = frames_walked(pcs, best);
    uint64_t trial[OSP_MAX_DEPTH];
    for (uint64_t off = 0; off + 16 <= copy.size && off < 4096; off += 8) {
        uint64_t saved, ra, at = sp + off;
        memcpy(&saved, copy.bytes + off, 8);
        memcpy(&ra, copy.bytes + off + 8, 8);
        if (ra == 0 || (saved != 0 && (saved <= at || saved - sp >= copy.size)))
            continue;
        enum osp_unwind_stop why = OSP_UNWIND_GO_ON;
        uint32_t depth = ospd_walk_copy_why(s->tables, s->tables_size, pc, sp, at, &copy, trial,
                                            OSP_MAX_DEPTH, &why);
        uint64_t frames = frames_walked(trial, depth);
        if (frames > best_frames) {
            best = depth;
            best_frames = frames;
            *stop = why;
            memcpy(pcs, trial, depth * sizeof *pcs);
        }
    }
    return best;
}

/* Where a blocked thread waits, without stopping it: the sp and pc of /proc/.../syscall (the
 * last two fields, for a thread in a system call or a page fault; "running" else), its stack
 * copied from there. The frame pointer is not there: the walk starts by the unwind rows.
 * Returns the depth, 0 when it is running or cannot be read. */
static uint32_t blocked_stack(struct ospd_ptrace_source *s, int32_t tid, uint64_t *pcs,
                              enum osp_unwind_stop *stop)
{
    char path[96], text[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)s->pid, (int)tid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    text[strcspn(text, "\n")] = '\0';
    char *pc_text = strrchr(text, ' ');
    if (pc_text == NULL || strncmp(text, "running", 7) == 0)
        return 0;
    *pc_text = '\0';
    char *sp_text = strrchr(text, ' ');
    if (sp_text == NULL)
        return 0;
    uint64_t pc = strtoull(pc_text + 1, NULL, 16), sp = strtoull(sp_text + 1, NULL, 16);
    return sp != 0 && pc != 0 ? walk_without_fp(s, tid, pc, sp, pcs, stop) : 0;
}

/* Seize tid and ask it to stop (it stops as soon as it runs kernel code: at once when on a
 * CPU). true when asked; its stop is collected by collect_stops. */
static bool interrupt(struct ospd_ptrace_source *s, int32_t tid)
{
    if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
        s->not_seized++; /* another tracer holds it, or it ended */
        return false;
    }
    if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) == 0)
        return true;
    ptrace(PTRACE_DETACH, tid, NULL, NULL);
    s->not_seized++;
    return false;
}

/* Arm (ms > 0) or disarm (0) the signal that ends a wait for a stop that does not come. */
static void guard(struct ospd_ptrace_source *s, uint32_t ms)
{
    struct itimerspec when = {{0, 0}, {ms / 1000, (long)(ms % 1000) * 1000000L}};
    if (s->guard_armed || ms > 0)
        timer_settime(s->guard, 0, &when, NULL);
    s->guard_armed = ms > 0;
}

/* The stop of an interrupted thread, reported by waitpid as `status`: its registers and stack
 * top copied, then let go at once (handing back a signal that came meanwhile: its delivery stop
 * is the sample), walked after. *in_syscall: it stopped inside (or at the end of) a system
 * call, not in its own code (orig_rax holds the call's number then, -1 else). Returns the
 * depth, 0 when it ended or is in a job-control stop (it stays stopped as it was). */
static uint32_t take_stop(struct ospd_ptrace_source *s, int32_t tid, int status, uint64_t *pcs,
                          enum osp_unwind_stop *stop, bool *in_syscall)
{
    *in_syscall = false;
    if (!WIFSTOPPED(status))
        return 0; /* it ended: a traced thread's end is ours to see, nothing to detach */
    uint64_t stopped_at = ospc_clock_ns(CLOCK_MONOTONIC);
    int event = status >> 16, sig = WSTOPSIG(status), deliver = 0;
    bool sample = true;
    if (event == 0)
        deliver = sig; /* a signal being delivered */
    else if (event != PTRACE_EVENT_STOP || sig != SIGTRAP)
        sample = false; /* a job-control stop */
    uint64_t pc = 0, sp = 0, fp = 0, size = 0;
    struct user_regs_struct regs;
    struct iovec io = {&regs, sizeof regs};
    if (sample && ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &io) == 0) {
#if defined(__x86_64__)
        pc = regs.rip, sp = regs.rsp, fp = regs.rbp;
        *in_syscall = (int64_t)regs.orig_rax >= 0;
#endif /* else pc 0: the walk of copied stacks knows x86_64 only */
        size = pc != 0 ? copy_stack(s, tid, sp) : 0;
    }
    ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)deliver);
    s->stops++;
    s->stopped_ns += ospc_clock_ns(CLOCK_MONOTONIC) - stopped_at;
    if (pc == 0)
        return 0;
    struct ospd_stack_copy copy = {sp, s->stack, size};
    return ospd_walk_copy_why(s->tables, s->tables_size, pc, sp, fp, &copy, pcs, OSP_MAX_DEPTH,
                              stop);
}

static struct ospd_ptrace_thread *find_thread(struct ospd_ptrace_source *s, int32_t tid)
{
    for (uint32_t i = 0; i < s->count; i++)
        if (s->threads[i].tid == tid)
            return &s->threads[i];
    uint64_t cap = s->cap;
    if (ospd_grow((void **)&s->threads, &cap, (uint64_t)s->count + 1, sizeof *s->threads) != 0)
        return NULL;
    s->cap = (uint32_t)cap;
    struct ospd_ptrace_thread *t = &s->threads[s->count++];
    *t = (struct ospd_ptrace_thread){
        .tid = tid, .thread = -1, .site = -1, .last_stack = -1, .last_sys_stack = -1};
    return t;
}

/* Pay `weight` periods of tid at stack (an interned one) or pcs[0..depth). */
static void pay(struct ospd_ptrace_source *s, struct ospd_collector *c,
                struct ospd_ptrace_thread *t, uint64_t now_ns, uint32_t state, uint64_t weight,
                int64_t stack)
{
    if (weight == 0 || stack < 0 || (uint64_t)stack >= c->stacks.count)
        return;
    uint32_t depth;
    const uint64_t *pcs = ospd_stack_pcs(&c->stacks, (uint32_t)stack, &depth);
    if (t->thread < 0)
        t->thread = ospd_attach_thread(c, s->pid, t->tid);
    if (t->thread < 0)
        return;
    ospd_collector_sample(c, now_ns, (uint32_t)t->thread, pcs, depth, state,
                          weight > UINT32_MAX ? UINT32_MAX : (uint32_t)weight);
}

/* Read where t blocks, once since it last ran. */
static void read_site(struct ospd_ptrace_source *s, struct ospd_collector *c,
                      struct ospd_ptrace_thread *t)
{
    if (t->site >= 0 && t->site_run_ns == t->run_ns)
        return;
    uint64_t pcs[OSP_MAX_DEPTH];
    enum osp_unwind_stop stop = OSP_UNWIND_GO_ON;
    uint32_t depth = blocked_stack(s, t->tid, pcs, &stop);
    t->site_run_ns = t->run_ns;
    if (depth > 0) {
        t->site = ospd_intern(&c->stacks, pcs, depth);
        if (t->site >= 0)
            ospd_stack_set_end(&c->stacks, (uint32_t)t->site, stop);
        s->sites++;
    }
}

/* One thread in one round. */
static void visit(struct ospd_ptrace_source *s, struct ospd_collector *c, int32_t tid,
                  uint64_t now_ns, bool begin)
{
    char state;
    uint64_t run, delay, ticks[2];
    if (thread_status(s->pid, tid, &state, ticks, &run, &delay) != 0)
        return;
    struct ospd_ptrace_thread *t = find_thread(s, tid);
    if (t == NULL)
        return;
    bool fresh = t->seen_ns == 0;
    t->seen = true;
    if (fresh && !begin) /* started in the window: all its time is the window's */
        t->start_run_ns = t->run_ns = t->delay_ns = t->utime0 = t->stime0 = 0;
    else if (fresh)
        t->start_run_ns = t->run_ns = run, t->delay_ns = delay, t->utime0 = ticks[0],
        t->stime0 = ticks[1];
    uint64_t ran = run - t->run_ns, queued = delay - t->delay_ns;
    uint64_t wall = fresh && begin ? 0 : now_ns - (fresh ? s->start_ns : t->seen_ns);
    t->run_ns = run;
    t->delay_ns = delay;
    t->seen_ns = now_ns;
    s->cpu_ns += ran;
    t->cpu_credit_ns += ran;
    /* The kernel's share of its CPU time in the window, as its user and system ticks split it
     * (the ticks are coarse, schedstat's time exact): credit paid only at stops in a system
     * call, the rest only at stops in its own code. */
    uint64_t user_ticks = ticks[0] - t->utime0, sys_ticks = ticks[1] - t->stime0;
    uint64_t sys_ns = user_ticks + sys_ticks == 0
                          ? 0
                          : (uint64_t)((double)(run - t->start_run_ns) * (double)sys_ticks /
                                       (double)(user_ticks + sys_ticks));
    t->sys_credit_ns += (int64_t)sys_ns - (int64_t)t->sys_ns;
    t->sys_ns = sys_ns;
    bool blocked = state == 'S' || state == 'D';
    if (begin || !s->stop_threads) {
        if (blocked)
            read_site(s, c, t);
        t->blocked_at_start = begin && blocked && t->site >= 0;
        return;
    }
    /* Running: state R and its CPU time moved since the last round (R is also a thread woken
     * and not yet on a CPU, still in the system call it waited in). */
    bool stop = (state == 'R' && ran > 0 && t->cpu_credit_ns >= s->period_ns) ||
                (s->stop_all && (state == 'R' || blocked)); /* py-spy's way, for comparison */
    if (stop && !t->interrupted)
        t->interrupted = interrupt(s, tid); /* its stop is taken by collect_stops */
    /* Blocked since the last round, for what it did not run or wait for a CPU: at the site
     * where it blocks now, else where it last blocked (it ran since, and may block there
     * again: a loop's nap). */
    /* Signed: schedstat's CPU time of a running thread lags by up to a scheduler tick, which
     * the next round's larger `ran` gives back. */
    int64_t debt_floor = -4 * (int64_t)s->period_ns;
    t->wait_credit_ns += (int64_t)wall - (int64_t)ran - (int64_t)queued;
    t->wait_credit_ns = t->wait_credit_ns < debt_floor ? debt_floor : t->wait_credit_ns;
    if (blocked)
        read_site(s, c, t);
    int64_t periods = t->wait_credit_ns / (int64_t)s->period_ns;
    if (periods > 0 && t->site >= 0) {
        pay(s, c, t, now_ns, OSP_STATE_WAITING, (uint64_t)periods, t->site);
        t->wait_credit_ns -= periods * (int64_t)s->period_ns;
    }
}

/* The stops of the threads interrupted by this round, each taken as it comes (waitpid for any
 * of them: a thread waits stopped only for its own registers and copy), at most `wait_ms`
 * in all. Its CPU credit paid at the stack found. A thread that has not stopped by then stays
 * interrupted for the next round (a thread runnable, not running, stops once it runs). */
static void collect_stops(struct ospd_ptrace_source *s, struct ospd_collector *c, uint64_t now_ns,
                          uint32_t wait_ms)
{
    uint32_t pending = 0;
    for (uint32_t i = 0; i < s->count; i++)
        pending += s->threads[i].interrupted;
    if (pending == 0)
        return;
    guard(s, wait_ms);
    while (pending > 0) {
        int status;
        pid_t tid = waitpid(-1, &status, __WALL);
        if (tid < 0 && errno == EINTR && s->guard_armed) {
            struct itimerspec left;
            if (timer_gettime(s->guard, &left) == 0 && left.it_value.tv_sec == 0 &&
                left.it_value.tv_nsec == 0)
                break; /* the guard fired */
            continue;
        }
        if (tid < 0)
            break;
        struct ospd_ptrace_thread *t = NULL;
        for (uint32_t i = 0; i < s->count && t == NULL; i++)
            if (s->threads[i].tid == tid && s->threads[i].interrupted)
                t = &s->threads[i];
        if (t == NULL)
            continue; /* not one of ours */
        t->interrupted = false;
        pending--;
        uint64_t pcs[OSP_MAX_DEPTH];
        enum osp_unwind_stop stop = OSP_UNWIND_GO_ON;
        bool in_syscall;
        uint32_t depth = take_stop(s, tid, status, pcs, &stop, &in_syscall);
        if (depth == 0)
            continue;
        int64_t stack = ospd_intern(&c->stacks, pcs, depth);
        if (stack >= 0)
            ospd_stack_set_end(&c->stacks, (uint32_t)stack, stop);
        /* A stop in a system call is paid the kernel's share of the credit only: a thread
         * found there mostly waited there (it blocked, or woke, between our read of its state
         * and its stop), and its code's CPU time is its code's. */
        uint64_t sys = t->sys_credit_ns > 0 ? (uint64_t)t->sys_credit_ns : 0;
        sys = sys < t->cpu_credit_ns ? sys : t->cpu_credit_ns;
        uint64_t periods = (in_syscall ? sys : t->cpu_credit_ns - sys) / s->period_ns;
        *(in_syscall ? &t->last_sys_stack : &t->last_stack) = stack;
        pay(s, c, t, now_ns, OSP_STATE_ON_CPU, periods, stack);
        t->cpu_credit_ns -= periods * s->period_ns;
        if (in_syscall)
            t->sys_credit_ns -= (int64_t)(periods * s->period_ns);
    }
    guard(s, 0);
}

static void scan(struct ospd_ptrace_source *s, struct ospd_collector *c, uint64_t now_ns,
                 bool begin)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)s->pid);
    DIR *dir = s->stack != NULL ? opendir(path) : NULL;
    if (dir == NULL)
        return;
    for (uint32_t i = 0; i < s->count; i++)
        s->threads[i].seen = false;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        int32_t tid = (int32_t)atoi(e->d_name);
        if (tid > 0)
            visit(s, c, tid, now_ns, begin);
    }
    closedir(dir);
    s->rounds++;
    collect_stops(s, c, now_ns, STOP_WAIT_MS);
}

void ospd_ptrace_begin(struct ospd_ptrace_source *s, struct ospd_collector *c, uint64_t now_ns)
{
    s->start_ns = now_ns;
    scan(s, c, now_ns, true);
}

void ospd_ptrace_round(struct ospd_ptrace_source *s, struct ospd_collector *c, uint64_t now_ns)
{
    scan(s, c, now_ns, false);
}

void ospd_ptrace_end(struct ospd_ptrace_source *s, struct ospd_collector *c, uint64_t now_ns)
{
    if (s->stop_threads) {
        scan(s, c, now_ns, false);
        collect_stops(s, c, now_ns, END_WAIT_MS); /* one not stopped in its round */
        for (uint32_t i = 0; i < s->count; i++) { /* the CPU credit left, at its latest stacks */
            struct ospd_ptrace_thread *t = &s->threads[i];
            uint64_t periods = (t->cpu_credit_ns + s->period_ns / 2) / s->period_ns;
            uint64_t sys = t->sys_credit_ns > 0 ? (uint64_t)t->sys_credit_ns : 0;
            sys = (sys + s->period_ns / 2) / s->period_ns;
            sys = sys < periods ? sys : periods;
            int64_t user_at = t->last_stack >= 0 ? t->last_stack : t->last_sys_stack;
            int64_t sys_at = t->last_sys_stack >= 0 ? t->last_sys_stack : t->last_stack;
            pay(s, c, t, now_ns, OSP_STATE_ON_CPU, periods - sys, user_at >= 0 ? user_at : t->site);
            pay(s, c, t, now_ns, OSP_STATE_ON_CPU, sys, sys_at >= 0 ? sys_at : t->site);
        }
        return;
    }
    ospd_ptrace_blocked(s, c, now_ns);
}

void ospd_ptrace_blocked(struct ospd_ptrace_source *s, struct ospd_collector *c, uint64_t now_ns)
{
    for (uint32_t i = 0; i < s->count && !s->stop_threads; i++) {
        struct ospd_ptrace_thread *t = &s->threads[i];
        char state;
        uint64_t run, delay, ticks[2];
        if (!t->blocked_at_start ||
            thread_status(s->pid, t->tid, &state, ticks, &run, &delay) != 0 ||
            run != t->start_run_ns) {
            t->blocked_at_start = false; /* it ran: the events see it from then on */
            continue;
        }
        uint64_t since = t->seen_ns > s->start_ns ? t->seen_ns : s->start_ns;
        uint64_t periods = now_ns > since ? (now_ns - since) / s->period_ns : 0;
        pay(s, c, t, now_ns, OSP_STATE_WAITING, periods, t->site);
        t->seen_ns = since + periods * s->period_ns; /* paid until */
    }
}
