/* mask.c — the program's view of SIGPROF in its threads' signal masks.
 *
 * Owns keeping SIGPROF deliverable on a registered thread whose program blocks it, while the
 * program sees the mask it asked for. Worker threads commonly start with all signals blocked
 * (xz's and liblzma's, many thread pools), and perf samples them: so while we sample and the
 * program has not taken SIGPROF for itself, SIGPROF stays unblocked in the kernel's mask of
 * every registered thread. The interposed pthread_sigmask and sigprocmask (signals.c) pass
 * their sets through osp__sigmask_view_before/after, which keep the program's view of SIGPROF
 * per thread (disposition.c holds it, where the handler reads it) and report it back in the old
 * mask; a thread that inherits a blocked SIGPROF is given the same treatment when it registers
 * (osp__sigmask_adopt). The sigwait family and signalfd lose SIGPROF from a larger set (they
 * would take our signals for the program's); a set of SIGPROF alone means the program uses it,
 * and we stop. An exec or a spawned child inherits the mask the program asked for. Once the
 * program uses SIGPROF itself, each thread's next mask call makes its real mask the program's
 * again. The kernel's mask as the view left it is kept too (osp__view_real): a thread whose
 * program changes its mask without the C library (Go's runtime) is told by the handler from
 * one the view holds.
 */
#include <signal.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"

static void prof_only(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGPROF);
}

/* Do we keep SIGPROF unblocked under the program's mask on this thread? */
/* No getpid here (a system call on every mask change): a forked child is inactive. A vfork
 * child, which shares our memory, could only touch its parent thread's view. */
static int virtualizing(void)
{
    return osp__tls_slot != NULL && osp__is_active() && osp__sigprof_installed() &&
           !osp__sigprof_program_signals();
}

int osp__sigmask_virtualizing(void)
{
    return virtualizing();
}

int osp__sigmask_shows_blocked(void)
{
    sigset_t cur;
    if (osp__view_active)
        return osp__view_blocked;
    return osp__sigmask_raw(SIG_BLOCK, NULL, &cur) == 0 && sigismember(&cur, SIGPROF) == 1;
}

void osp__sigmask_adopt(int inherited_blocked)
{
    sigset_t cur, prof;
    if (!virtualizing() || osp__view_active || osp__sigmask_raw(SIG_BLOCK, NULL, &cur) != 0 ||
        (!inherited_blocked && sigismember(&cur, SIGPROF) != 1))
        return;
    osp__view_blocked = 1;
    osp__view_active = 1;
    osp__view_real = osp__sigmask_word(&cur);
    prof_only(&prof);
    osp__sigmask_raw(SIG_UNBLOCK, &prof, NULL);
}

const sigset_t *osp__sigmask_view_before(int how, const sigset_t *set, sigset_t *copy, int *shown)
{
    sigset_t cur;
    /* A view of SIGPROF blocked on a thread whose program has since unblocked a signal behind
     * the C library (Go's runtime, on each thread it starts): SIGPROF is unblocked, as the
     * kernel's mask says (disposition.c tells the same in the handler). Held to it, the old
     * mask given back would show SIGPROF blocked, and the program would restore it so. */
    if (osp__view_active && osp__view_blocked && osp__sigmask_raw(SIG_BLOCK, NULL, &cur) == 0 &&
        (osp__view_real & ~osp__sigmask_word(&cur)) != 0)
        osp__view_blocked = 0;
    *shown = osp__view_active ? osp__view_blocked : -1;
    if (!virtualizing()) {
        if (osp__view_active && osp__is_active() && getpid() == osp__boot_pid()) {
            /* The program uses SIGPROF now: its mask becomes the real one again. */
            sigset_t prof;
            prof_only(&prof);
            if (osp__view_blocked)
                osp__sigmask_raw(SIG_BLOCK, &prof, NULL);
            osp__view_active = 0;
            *shown = -1;
        }
        return set;
    }
    if (set == NULL)
        return set;
    int listed = sigismember(set, SIGPROF) == 1;
    if (how == SIG_SETMASK ? !listed : how == SIG_UNBLOCK ? listed : 0) {
        osp__view_blocked = 0;
        return set;
    }
    if (!listed || how == SIG_UNBLOCK)
        return set;
    osp__view_blocked = 1;
    osp__view_active = 1;
    *copy = *set;
    sigdelset(copy, SIGPROF);
    return copy;
}

void osp__sigmask_view_after(int how, const sigset_t *passed, sigset_t *old, int shown)
{
    if (osp__view_active) {
        /* The kernel's mask now, as the handler compares it (disposition.c). */
        uint64_t was = osp__sigmask_word(old);
        uint64_t set = passed != NULL ? osp__sigmask_word(passed) : 0;
        osp__view_real = passed == NULL       ? was
                         : how == SIG_SETMASK ? set
                         : how == SIG_BLOCK   ? was | set
                                              : was & ~set;
    }
    if (shown < 0)
        return;
    if (shown)
        sigaddset(old, SIGPROF);
    else
        sigdelset(old, SIGPROF);
}

int osp__sigmask_child_begin(void)
{
    /* Reads only: a vfork child calls this too. */
    if (!osp__view_active || !osp__view_blocked)
        return 0;
    sigset_t prof;
    prof_only(&prof);
    osp__sigmask_raw(SIG_BLOCK, &prof, NULL);
    return 1;
}

void osp__sigmask_child_end(int blocked)
{
    if (!blocked || getpid() != osp__boot_pid())
        return;
    sigset_t prof;
    prof_only(&prof);
    osp__sigmask_raw(SIG_UNBLOCK, &prof, NULL);
}

const sigset_t *osp__sigwait_set(const sigset_t *set, sigset_t *copy)
{
    if (set == NULL || sigismember(set, SIGPROF) != 1 || !virtualizing())
        return set;
    *copy = *set;
    sigdelset(copy, SIGPROF);
    if (sigisemptyset(copy)) {
        osp__program_will_signal(SIGPROF);
        return set;
    }
    return copy;
}
