/* collector.c — the collector's life outside its records: set up and freed, told the
 * identity of the process its ring belongs to, its losses totalled, the bytes its tables
 * hold, and the text of a record made valid UTF-8. The records themselves are read by
 * collect.c; the ring is framed by ring-walk.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osp_unwind_step.h"
#include "ospd.h"
#include "ospd_collect.h"

void ospd_collector_init(struct ospd_collector *c)
{
    memset(c, 0, sizeof *c);
    ospd_interner_init(&c->stacks);
    c->exit_code = -1;
    c->memory_limit = OSPD_DEFAULT_MEMORY_LIMIT;
}

uint64_t ospd_collector_table_bytes(const struct ospd_collector *c)
{
    const struct ospd_interner *in = &c->stacks;
    return c->samples_cap * sizeof *c->samples + in->pool_cap * sizeof *in->pool +
           (uint64_t)in->stacks_cap * sizeof *in->stacks + (uint64_t)in->slots_cap * 4u;
}

void ospd_collector_free(struct ospd_collector *c)
{
    ospd_copies_free(&c->copies);
    for (uint32_t i = 0; i < c->thread_count; i++)
        free(c->threads[i].label);
    for (uint32_t i = 0; i < c->image_count; i++)
        free(c->images[i].path);
    for (uint32_t i = 0; i < c->escaped_count; i++)
        free(c->escaped[i].path);
    free(c->escaped);
    for (uint32_t i = 0; i < c->jit_count; i++)
        free(c->jit[i].name);
    free(c->jit);
    for (uint32_t i = 0; i < c->py_count; i++)
        free(c->py[i].name);
    free(c->py);
    for (uint32_t i = 0; i < c->jit_map_count; i++)
        free(c->jit_maps[i]);
    for (uint32_t i = 0; i < c->jit_note_count; i++)
        free(c->jit_notes[i]);
    free(c->threads);
    free(c->slots);
    free(c->images);
    free(c->samples);
    free(c->exe_fallback);
    free(c->comm);
    ospd_spill_free(c);
    ospd_interner_free(&c->stacks);
    ospd_waits_free(&c->waits);
    memset(c, 0, sizeof *c);
}

void ospd_copy_ascii_field(char *dst, const char *src, size_t size)
{
    size_t i = 0;
    for (; i + 1 < size && src[i] != '\0'; i++)
        dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
    dst[i] = '\0';
}

void ospd_collector_set_identity(struct ospd_collector *c, const struct osp_ring_header *h)
{
    char platform[OSP_PLATFORM_SIZE];
    memcpy(platform, h->platform, sizeof platform); /* one read of shared bytes */
    ospd_collector_identity(c, h->pid, h->rate_hz, h->start_unix_ns, h->start_mono_ns, platform);
    c->parent_pid = h->parent_pid > 0 ? h->parent_pid : 0;
    c->forked = (h->ring_flags & OSP_RING_FORKED) != 0;
}

void ospd_collector_identity(struct ospd_collector *c, int32_t pid, uint32_t rate_hz,
                             uint64_t start_unix_ns, uint64_t start_mono_ns,
                             const char platform[OSP_PLATFORM_SIZE])
{
    c->pid = pid;
    int32_t shown = ospd_proc_pid(pid);
    c->proc_pid = shown > 0 ? shown : 0;
    c->rate_hz = rate_hz;
    c->start_unix_ns = start_unix_ns;
    c->start_mono_ns = start_mono_ns;
    ospd_copy_ascii_field(c->platform, platform, OSP_PLATFORM_SIZE);
}

uint64_t ospd_dropped_total(const struct ospd_collector *c)
{
    uint64_t total = c->shim_dropped + c->lost;
    return total < c->lost ? UINT64_MAX : total;
}

char *ospd_utf8_sanitize(const char *bytes, size_t len)
{
    static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
    const unsigned char *s = (const unsigned char *)bytes;
    char *out = malloc(len * 3 + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        unsigned char b = s[i];
        size_t n = 0; /* length of a well-formed sequence starting at i, 0 if none */
        if (b >= 0x01 && b <= 0x7f) {
            n = 1;
        } else if (b >= 0xc2 && b <= 0xdf) {
            n = (i + 1 < len && (s[i + 1] & 0xc0) == 0x80) ? 2 : 0;
        } else if (b >= 0xe0 && b <= 0xef && i + 2 < len) {
            unsigned char lo = b == 0xe0 ? 0xa0 : 0x80, hi = b == 0xed ? 0x9f : 0xbf;
            n = (s[i + 1] >= lo && s[i + 1] <= hi && (s[i + 2] & 0xc0) == 0x80) ? 3 : 0;
        } else if (b >= 0xf0 && b <= 0xf4 && i + 3 < len) {
            unsigned char lo = b == 0xf0 ? 0x90 : 0x80, hi = b == 0xf4 ? 0x8f : 0xbf;
            n = (s[i + 1] >= lo && s[i + 1] <= hi && (s[i + 2] & 0xc0) == 0x80 &&
                 (s[i + 3] & 0xc0) == 0x80)
                    ? 4
                    : 0;
        }
        if (n == 0) {
            memcpy(out + o, replacement, 3);
            o += 3;
            i += 1;
        } else {
            memcpy(out + o, s + i, n);
            o += n;
            i += n;
        }
    }
    out[o] = '\0';
    return out;
}
