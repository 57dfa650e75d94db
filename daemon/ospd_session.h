/* ospd_session.h — what every collector of ospreyd does the same way, whatever its source
 * (session.c): the target's clock and liveness (its pidfd watched in the libuv loop, how it
 * ended), the raw file published under its directory's lock, the outputs exported beside it
 * (common/'s stem), and the run's lock. */
#ifndef OSPD_SESSION_H
#define OSPD_SESSION_H

#include <stdint.h>
#include <uv.h>

#include "ospc.h"
#include "ospd.h"

/* The target's pidfd, watched in the loop: `on_end` runs when it turns readable. */
struct ospd_watch {
    int32_t pid;
    int pidfd; /* -1: none (an old kernel, or the target gone already: errno ESRCH) */
    uv_poll_t poll;
    bool polling;
};

/* The target's CPU time so far (its process CPU clock), 0 when it is gone. */
uint64_t ospd_target_cpu_ns(int32_t pid);

/* Open the pidfd of `pid` and watch it in `loop` (poll.data = `data`). Returns 0, -ESRCH when
 * the target is gone already, or another negative errno (then the caller's liveness check is
 * the only watch). */
int ospd_watch_start(struct ospd_watch *w, uv_loop_t *loop, int32_t pid, uv_poll_cb on_end,
                     void *data);
/* Stop polling (the handle stays until ospd_watch_close). */
void ospd_watch_pause(struct ospd_watch *w);
/* Close the handle (in the loop) — the pidfd stays for ospd_watch_ended; ospd_watch_free
 * closes it once the loop has ended. */
void ospd_watch_close(struct ospd_watch *w);
void ospd_watch_free(struct ospd_watch *w);
/* How the target ended: KILLED (c->exit_signal set) or VANISHED (c->exit_code set when
 * known), from /proc while it is a zombie, else from its pidfd. `state` and `wait_status`
 * are ospd_target_state's, read as soon as the end was seen (a zombie's status is there only
 * until it is reaped). */
enum ospd_exit_status ospd_watch_ended(const struct ospd_watch *w, char state, int wait_status,
                                       struct ospd_collector *c);

/* Publish the raw file at `out_path`, or beside it (osp_per_pid_path) when another profiled
 * process wrote that path since this profile started (*beside set then), taking turns with
 * the other collectors on the directory's lock for at most 100 ms. The path written goes to
 * `written`; `pending` is to be synced or released by the caller. 0, or -1 with `err`. */
int ospd_session_publish(const struct ospd_collector *c, const char *out_path, char *written,
                         size_t written_size, bool *beside, struct ospc_atomic *pending, char *err,
                         size_t err_size);

/* The outputs `formats` asks for (OSPREY_EXPORT, --export), beside the raw file at `raw_path`
 * under its stem (ospc_raw_stem). 0, or -1 after one line on stderr. */
int ospd_session_export(const char *raw_path, const char *formats);

/* The run's lock (OSP_RUN_LOCK): `handed` (--run-lock-fd), else the file beside the raw
 * profile at `out_path` when the CLI made one; held shared until this process ends. Returns
 * its descriptor, or -1 (no run lock: osprey has found the run over, or there is none). */
int ospd_session_run_lock(int handed, const char *out_path);

/* A source of samples: the shim's rings (ring-source.c), perf events (attach.c). The session
 * runs one, chosen once by ospreyd.c's command line, in the libuv loop; everything else of
 * the collector (the loop, the clocks, the target's watch, publishing, the run's lock) is the
 * session's above. */
struct ospd_source_ops {
    const char *name;
    /* Open what the source reads (map the ring, open the events), fill the collector's
     * identity, and start its handles in `loop`. 0, or ospreyd's exit code after one line. */
    int (*attach)(void *source, uv_loop_t *loop);
    /* Read what has come (`all`: everything there is). Returns true once the profile ended. */
    bool (*drain)(void *source, bool all);
    /* End the profile now with `status` (stop sampling, read the rest, write the file) and
     * close the source's handles. Nothing when it has ended already. */
    void (*stop)(void *source, enum ospd_exit_status status);
    /* After the loop: release everything and free `source`. Returns ospreyd's exit code. */
    int (*close)(void *source);
};

/* Run `source` to its end: attach, the loop until every handle of the source is closed (its
 * profile written), stop (with "stopped", when it did not end by itself), close. Returns
 * ospreyd's exit code. */
int ospd_session_run(const struct ospd_source_ops *ops, void *source);

#endif /* OSPD_SESSION_H */
