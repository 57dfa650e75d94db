/* ospd_follow.h — later images followed in this collector's own process (follow.c): a greeted
 * image's session started in this loop instead of a new ospreyd per image. */
#ifndef OSPD_FOLLOW_H
#define OSPD_FOLLOW_H

#include <stdbool.h>
#include <uv.h>

#include "osp_ring.h"
#include "ospd_switch.h"

/* Images followed at once in one process, besides its first; a greeting beyond them gets a
 * collector process of its own, as before (forks.c). Below OSPD_MAX_RING_MAPS. */
#define OSPD_MAX_FOLLOWED 32

/* Follow the greeter of `hello` in `loop`: its session (ring-source.c) made from the
 * descriptors the greeting laid out (`fds`, `n`: ring, switch events, socket, tables; they
 * stay the caller's: this takes copies; `hold`, its switch events mapped since its greeting,
 * is taken over and left empty), attached now (mapped on libuv's pool) and ended by itself as a
 * collector process's would, its raw file written the same. Returns 0 (followed, or refused after
 * one line, as its own process would have said), or -EBUSY at OSPD_MAX_FOLLOWED (the caller starts
 * a collector process), or another -errno (nothing taken). */
int ospd_follow(uv_loop_t *loop, const struct osp_fork_hello *hello, const int *fds, int n,
                struct ospd_switch_hold *hold, const char *self, const char *export_formats,
                int run_lock);

/* Has this process followed an image (its thread then keeps the program's nice value)? */
bool ospd_following(void);

/* After the loop has run out: stop every image still followed (exit status "stopped", as a
 * collector process's session stops its source) and close the reaper; then run the loop for
 * their handles' closes before ospd_follow_close. */
void ospd_follow_stop(void);
/* Finish and free every image followed (their outputs written, when asked). */
void ospd_follow_close(void);

#endif
