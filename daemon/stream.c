/* stream.c — the live stream of `ospreyd --attach-pid PID --stream` (what `osprey top` reads):
 * what the collector gathered since the last flush, as lines of text on a pipe, so that a
 * reader keeps a sliding window of its own while ospreyd keeps no samples at all.
 *
 * The format (daemon/README.md, "The live stream"), one record a line, numbers in decimal
 * but addresses in hex:
 *   osprey-stream 1 PID RATE        first, once the events are enabled
 *   image BASE SLIDE TEXT TEXT_SIZE MAIN PATH
 *   stack INDEX PC...               leaf first; INDEX counts up from 0, each sent once
 *   thread INDEX TID LABEL          each thread once, before its first sample; INDEX from 0
 *   sample T_NS STACK STATE WEIGHT THREAD  T_NS since the attach; STATE 0 on-CPU, 1 waiting
 *   flush T_NS                      the end of a batch: what came before it is up to T_NS
 *   end HOW [CODE]                  exited CODE, killed SIGNAL, vanished or stopped; last
 * A reader skips a record it does not know (later versions add some).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ospd_attach.h"

int ospd_stream_begin(struct ospd_stream *s, FILE *out, int32_t pid, uint32_t rate_hz)
{
    memset(s, 0, sizeof *s);
    s->out = out;
    fprintf(out, "osprey-stream 1 %d %" PRIu32 "\n", (int)pid, rate_hz);
    return fflush(out) == 0 ? 0 : -EPIPE;
}

int ospd_stream_flush(struct ospd_stream *s, struct ospd_collector *c, uint64_t now_rel_ns)
{
    FILE *out = s->out;
    for (; s->images_sent < c->image_count; s->images_sent++) {
        const struct ospd_image *im = &c->images[s->images_sent];
        fprintf(out, "image %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %d %s\n", im->base,
                im->slide, im->text, im->text_size, im->main ? 1 : 0, im->path);
    }
    for (; s->stacks_sent < c->stacks.count; s->stacks_sent++) {
        uint32_t depth;
        const uint64_t *pcs = ospd_stack_pcs(&c->stacks, s->stacks_sent, &depth);
        fprintf(out, "stack %" PRIu32, s->stacks_sent);
        for (uint32_t k = 0; k < depth; k++)
            fprintf(out, " %" PRIx64, pcs[k]);
        fputc('\n', out);
    }
    for (; s->threads_sent < c->thread_count; s->threads_sent++) {
        const struct ospd_thread *th = &c->threads[s->threads_sent];
        fprintf(out, "thread %" PRIu32 " %d %s\n", s->threads_sent, (int)th->tid, th->label);
    }
    for (uint64_t i = 0; i < c->sample_count; i++) {
        const struct ospd_sample *sample = &c->samples[i];
        fprintf(out, "sample %" PRIu64 " %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 "\n",
                sample->t_rel_ns, sample->stack_state >> 1, sample->stack_state & 1u,
                sample->weight, sample->thread);
    }
    c->sample_count = 0; /* the reader keeps them; the collector's memory stays flat */
    fprintf(out, "flush %" PRIu64 "\n", now_rel_ns);
    return fflush(out) == 0 && !ferror(out) ? 0 : -EPIPE;
}

void ospd_stream_end(struct ospd_stream *s, const struct ospd_collector *c)
{
    switch (c->exit_status) {
    case OSPD_EXIT_KILLED:
        fprintf(s->out, "end killed %d\n", c->exit_signal);
        break;
    case OSPD_EXIT_VANISHED:
        if (c->exit_code >= 0)
            fprintf(s->out, "end exited %d\n", c->exit_code);
        else
            fprintf(s->out, "end vanished\n");
        break;
    default:
        fprintf(s->out, "end stopped\n");
        break;
    }
    fflush(s->out);
}
