/* top-window.c — the sliding window of `osprey top` and the screen drawn from it: the samples
 * of the last seconds, added up per function (self and total, as the report counts them:
 * weights of on-CPU samples, a function once per sample however often it recurs), sorted,
 * and laid out in the terminal's rows and columns with the report's colours.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ospc.h"
#include "osprey_top.h"
#include "ospx.h"

int osprey_top_window_add(struct osprey_top_window *w, const struct osprey_top_sample *sample)
{
    if (w->count == w->capacity) {
        size_t capacity = w->capacity > 0 ? w->capacity * 2 : 1024;
        struct osprey_top_sample *grown = realloc(w->samples, capacity * sizeof *grown);
        if (grown == NULL)
            return -ENOMEM;
        w->samples = grown;
        w->capacity = capacity;
    }
    w->samples[w->count++] = *sample;
    return 0;
}

void osprey_top_window_advance(struct osprey_top_window *w, uint64_t now_ns)
{
    if (now_ns < w->span_ns)
        return;
    uint64_t oldest = now_ns - w->span_ns; /* t_ns <= oldest has left */
    size_t kept = 0;
    for (size_t i = 0; i < w->count; i++) /* in place, order kept (waits come late) */
        if (w->samples[i].t_ns > oldest)
            w->samples[kept++] = w->samples[i];
    w->count = kept;
}

void osprey_top_window_free(struct osprey_top_window *w)
{
    free(w->samples);
    w->samples = NULL;
    w->count = w->capacity = 0;
}

/* The sample is in the window at now_ns: now_ns - span_ns < t_ns <= now_ns. */
static int in_window(const struct osprey_top_window *w, const struct osprey_top_sample *s,
                     uint64_t now_ns)
{
    return s->t_ns <= now_ns && (now_ns < w->span_ns || s->t_ns > now_ns - w->span_ns);
}

static int by_share(const void *x, const void *y)
{
    const struct osprey_top_row *a = x, *b = y;
    return ospc_hottest_first(a->self, b->self, a->total, b->total, a->function, b->function);
}

int osprey_top_aggregate(const struct osprey_top_window *w, uint64_t now_ns, size_t function_count,
                         osprey_top_stack_functions stack_functions, void *context,
                         struct osprey_top_row **rows, size_t *row_count,
                         struct osprey_top_totals *totals)
{
    memset(totals, 0, sizeof *totals);
    *rows = NULL;
    *row_count = 0;
    struct osprey_top_row *all = calloc(function_count + 1, sizeof *all);
    size_t *seen = calloc(function_count + 1, sizeof *seen); /* the sample that counted it last */
    if (all == NULL || seen == NULL) {
        free(all);
        free(seen);
        return -ENOMEM;
    }
    for (size_t i = 0; i < w->count; i++) {
        const struct osprey_top_sample *s = &w->samples[i];
        if (!in_window(w, s, now_ns))
            continue;
        totals->samples++;
        if (s->state != 0) {
            totals->waiting += s->weight;
            continue;
        }
        totals->on_cpu += s->weight;
        const uint32_t *functions = NULL;
        size_t depth = stack_functions(context, s->stack, &functions);
        for (size_t k = 0; k < depth; k++) {
            uint32_t f = functions[k];
            if (f >= function_count)
                continue;
            if (k == 0)
                all[f].self += s->weight;
            if (seen[f] != i + 1) {
                seen[f] = i + 1;
                all[f].total += s->weight;
            }
        }
    }
    size_t count = 0;
    for (size_t f = 0; f < function_count; f++)
        if (all[f].total > 0) {
            all[count] = all[f];
            all[count++].function = (uint32_t)f;
        }
    free(seen);
    qsort(all, count, sizeof *all, by_share);
    *rows = all;
    *row_count = count;
    return 0;
}

static int by_total(const void *x, const void *y)
{
    const struct osprey_top_row *a = x, *b = y;
    int c = ospc_larger_first(a->total, b->total);
    return c != 0 ? c : by_share(x, y);
}

void osprey_top_sort(struct osprey_top_row *rows, size_t count, enum osprey_top_sort by)
{
    qsort(rows, count, sizeof *rows, by == OSPREY_TOP_BY_TOTAL ? by_total : by_share);
}

/* One sample's thread and leaf function (UINT32_MAX: waiting, or not known), for each
 * thread's time and its hottest function. */
struct leaf {
    uint32_t thread, function;
    uint64_t on_cpu, waiting;
};

static int by_thread_function(const void *x, const void *y)
{
    const struct leaf *a = x, *b = y;
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    return a->function < b->function ? -1 : a->function > b->function;
}

static int by_busy(const void *x, const void *y)
{
    const struct osprey_top_thread_row *a = x, *b = y;
    return ospc_hottest_first(a->on_cpu, b->on_cpu, a->waiting, b->waiting, a->thread, b->thread);
}

int osprey_top_threads(const struct osprey_top_window *w, uint64_t now_ns, size_t function_count,
                       osprey_top_stack_functions stack_functions, void *context,
                       struct osprey_top_thread_row **rows, size_t *row_count)
{
    *rows = NULL;
    *row_count = 0;
    struct leaf *leaves = calloc(w->count + 1, sizeof *leaves);
    struct osprey_top_thread_row *all = calloc(w->count + 1, sizeof *all);
    if (leaves == NULL || all == NULL) {
        free(leaves);
        free(all);
        return -ENOMEM;
    }
    size_t leaf_count = 0;
    for (size_t i = 0; i < w->count; i++) {
        const struct osprey_top_sample *s = &w->samples[i];
        if (!in_window(w, s, now_ns))
            continue;
        const uint32_t *functions = NULL;
        size_t depth = s->state == 0 ? stack_functions(context, s->stack, &functions) : 0;
        uint32_t leaf = depth > 0 && functions[0] < function_count ? functions[0] : UINT32_MAX;
        leaves[leaf_count++] = (struct leaf){s->thread, leaf, s->state == 0 ? s->weight : 0,
                                             s->state != 0 ? s->weight : 0};
    }
    qsort(leaves, leaf_count, sizeof *leaves, by_thread_function);
    size_t count = 0;
    uint64_t best = 0;
    for (size_t i = 0; i < leaf_count;) {
        size_t j = i;
        uint64_t on = 0, waiting = 0;
        while (j < leaf_count && leaves[j].thread == leaves[i].thread &&
               leaves[j].function == leaves[i].function) {
            on += leaves[j].on_cpu;
            waiting += leaves[j].waiting;
            j++;
        }
        if (count == 0 || all[count - 1].thread != leaves[i].thread) {
            all[count++] = (struct osprey_top_thread_row){leaves[i].thread, 0, 0, UINT32_MAX};
            best = 0;
        }
        struct osprey_top_thread_row *row = &all[count - 1];
        row->on_cpu += on;
        row->waiting += waiting;
        if (leaves[i].function != UINT32_MAX && on > best) {
            best = on;
            row->hottest = leaves[i].function;
        }
        i = j;
    }
    free(leaves);
    qsort(all, count, sizeof *all, by_busy);
    *rows = all;
    *row_count = count;
    return 0;
}

static double percent(uint64_t part, uint64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* One line fitted to the width, in a colour or none. */
static void put_line(FILE *out, const struct osprey_top_screen *screen, const char *color,
                     const char *text)
{
    char line[4096];
    ospx_text_fit(line, sizeof line, text, screen->width, OSPX_CUT_END);
    if (color != NULL && screen->color)
        fprintf(out, "%s%s%s%s", color, line, OSPX_COLOR_RESET, screen->line_end);
    else
        fprintf(out, "%s%s", line, screen->line_end);
}

static size_t render_help(FILE *out, const struct osprey_top_screen *screen, size_t lines)
{
    static const char *const keys[] = {
        "Keys:",
        "  s  1     functions by SELF% (time in the function itself; the default)",
        "  c  2     functions by TOTAL% (time in it and in what it calls)",
        "  t        threads: each thread's CPU, its share waiting, its hottest function",
        "  f        functions again",
        "  space p  pause: the screen stays as it is (again: go on)",
        "  ?  h     these keys (any key: back)",
        "  q        quit (also Ctrl-C)",
    };
    size_t drawn = 0;
    for (; drawn < sizeof keys / sizeof keys[0] && drawn < lines; drawn++)
        put_line(out, screen, NULL, keys[drawn]);
    return drawn;
}

static size_t render_threads(FILE *out, const struct osprey_top_screen *screen, size_t lines)
{
    char text[4096];
    put_line(out, screen, NULL, "  CPU%  WAIT%      TID  THREAD           HOTTEST");
    size_t drawn = 1;
    for (size_t r = 0; r < screen->thread_row_count && drawn < lines; r++, drawn++) {
        const struct osprey_top_thread_row *row = &screen->threads[r];
        double cpu = screen->rate_hz > 0 && screen->seconds > 0
                         ? 100.0 * (double)row->on_cpu / screen->rate_hz / screen->seconds
                         : 0.0;
        int known = row->thread < screen->thread_count;
        char tid[16];
        snprintf(tid, sizeof tid, "%d", known ? (int)screen->tids[row->thread] : 0);
        snprintf(text, sizeof text, "%5.0f%% %5.1f%%  %7s  %-15s  %s", cpu,
                 percent(row->waiting, row->on_cpu + row->waiting), known ? tid : "?",
                 known ? screen->thread_labels[row->thread] : "?",
                 row->hottest != UINT32_MAX ? screen->names[row->hottest] : "-");
        put_line(out, screen, NULL, text);
    }
    return drawn;
}

#define HEADER_LINES  4  /* two of figures, a blank one, the table's titles */
#define SHARE_COLUMNS 16 /* "SELF%  TOTAL%  " */

size_t osprey_top_render(FILE *out, const struct osprey_top_screen *screen)
{
    if (screen->height < 2 || screen->width == 0)
        return 0;
    size_t lines = screen->height - 1, drawn = 0;
    const struct osprey_top_totals *t = &screen->totals;
    char text[4096];
    double cpu = screen->rate_hz > 0 && screen->seconds > 0
                     ? 100.0 * (double)t->on_cpu / screen->rate_hz / screen->seconds
                     : 0.0;
    static const char *const views[] = {"", "  threads", "  keys"};
    /* Under a second (the first refreshes) in tenths: not "last 0 s" beside its samples. */
    snprintf(text, sizeof text, "osprey top  pid %d (%s)  %u Hz  last %.*f s: %llu samples%s%s%s",
             (int)screen->pid, screen->command, screen->rate_hz, screen->seconds < 0.95 ? 1 : 0,
             screen->seconds, (unsigned long long)t->samples,
             screen->view == OSPREY_TOP_FUNCTIONS && screen->sort == OSPREY_TOP_BY_TOTAL
                 ? "  by TOTAL%"
                 : "",
             views[screen->view], screen->paused ? "  PAUSED" : "");
    put_line(out, screen, NULL, text);
    if (++drawn == lines)
        return drawn;
    uint64_t all = t->on_cpu + t->waiting;
    snprintf(text, sizeof text, "CPU %.0f%% of a core  on-CPU %.1f%%  waiting %.1f%%%s", cpu,
             percent(t->on_cpu, all), percent(t->waiting, all),
             screen->hint != NULL ? screen->hint : "");
    put_line(out, screen, NULL, text);
    if (++drawn == lines)
        return drawn;
    put_line(out, screen, NULL, "");
    if (++drawn == lines)
        return drawn;
    if (screen->view == OSPREY_TOP_HELP)
        return drawn + render_help(out, screen, lines - drawn);
    if (screen->view == OSPREY_TOP_THREADS)
        return drawn + render_threads(out, screen, lines - drawn);

    /* FUNCTION and LOCATION share what SELF% and TOTAL% leave: LOCATION up to 2/5 of it. */
    size_t rows = screen->row_count < lines - drawn - 1 ? screen->row_count : lines - drawn - 1;
    size_t function_width = strlen("FUNCTION"), location_width = strlen("LOCATION");
    for (size_t r = 0; r < rows; r++) {
        size_t f = ospx_text_columns(screen->names[screen->rows[r].function]);
        size_t l = ospx_text_columns(screen->locations[screen->rows[r].function]);
        function_width = f > function_width ? f : function_width;
        location_width = l > location_width ? l : location_width;
    }
    size_t available =
        screen->width > SHARE_COLUMNS + 2 + 2 ? screen->width - SHARE_COLUMNS - 2 : 2;
    if (function_width + location_width > available) {
        size_t share = available * 2 / 5 > 1 ? available * 2 / 5 : 1;
        location_width = location_width < share ? location_width : share;
        if (function_width > available - location_width)
            function_width = available - location_width;
        else
            location_width = available - function_width;
    }
    snprintf(text, sizeof text, "%6s %7s  %-*s  %s", "SELF%", "TOTAL%", (int)function_width,
             "FUNCTION", "LOCATION");
    put_line(out, screen, NULL, text);
    drawn++;
    for (size_t r = 0; r < rows; r++, drawn++) {
        const struct osprey_top_row *row = &screen->rows[r];
        double self = percent(row->self, t->on_cpu), total = percent(row->total, t->on_cpu);
        char short_name[1024], function[1024], location[1024];
        /* As the report's table: the name pprof-style short, cut at its start (its end tells
         * two apart). */
        ospx_short_name(short_name, sizeof short_name, screen->names[row->function]);
        ospx_text_fit(function, sizeof function, short_name, function_width, OSPX_CUT_START);
        ospx_text_fit(location, sizeof location, screen->locations[row->function], location_width,
                      OSPX_CUT_START);
        /* %-*s pads by bytes: widen by the bytes the multi-byte characters add. */
        int pad = (int)(function_width + strlen(function) - ospx_text_columns(function));
        snprintf(text, sizeof text, "%5.1f%% %6.1f%%  %-*s  %s", self, total, pad, function,
                 location);
        put_line(out, screen, ospx_share_color(self), text);
    }
    return drawn;
}
