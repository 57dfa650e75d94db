/* ospd_forks.h — ospreyd's side of forked children ("Forked children" in proto/osp_ring.h):
 * the socket the target's forked children greet, and a collector started for each. */
#ifndef OSPD_FORKS_H
#define OSPD_FORKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#define OSPD_MAX_FORK_COLLECTORS    4096u /* collectors started and not reaped yet */
#define OSPD_MAX_FORK_CONNECTIONS   64    /* accepted, their greeting not come yet */
#define OSPD_FORK_ACCEPTS_PER_ROUND 32    /* connections accepted per round of the loop */

struct pending;
struct ospd_collector;
struct connection;

struct ospd_forks {
    uv_poll_t poll;
    uv_loop_t *loop;
    int fd;                           /* the listening socket, or -1 */
    const char *self;                 /* this ospreyd's executable */
    const char *export_formats;       /* handed on: --export, or NULL */
    int run_lock;                     /* handed on: the run's lock (OSP_RUN_LOCK), or -1 */
    struct ospd_collector *collector; /* the target's: names children of another user */
    pid_t *children;                  /* collectors started, until reaped */
    uint32_t child_count;
    struct pending *pending;        /* greetings waiting to settle (forks.c) */
    struct connection *connections; /* accepted, their greeting not come yet (forks.c) */
    uint32_t connection_count;
    uint64_t started, refused; /* greetings acted on, and refused (one line each, up to 3) */
    uint64_t skipped;          /* children gone before their first sample: no collector */
    uint64_t strangers;        /* connections of another user's, closed unread */
    bool next_image_done;      /* the target exec'd: its next image's greeting waited for */
    bool next_image_followed;  /* the target's next image greeted (it exec'd): followed */
};

/* Take the listening socket `fd` the shim handed over (the target's children that changed
 * their user are named in `collector`'s escaped processes) (closed on failure). Returns 0, or
 * -errno (the target's children then start collectors of their own). */
int ospd_forks_adopt(struct ospd_forks *f, uv_loop_t *loop, int fd, const char *self,
                     const char *export_formats, int run_lock, struct ospd_collector *collector);
/* Reap the collectors that have ended (never blocks). */
void ospd_forks_reap(struct ospd_forks *f);
/* The target exec'd away: when its next image is to greet this collector
 * (OSPREY_PROFILE_GREET), wait for that greeting (bounded) and start its collector now, before
 * this one writes its file. Once; ospd_forks_close does it otherwise. */
void ospd_forks_next_image(struct ospd_forks *f);
/* Stop listening (the collectors started run on). */
void ospd_forks_close(struct ospd_forks *f);

#endif
