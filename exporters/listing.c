/* listing.c — the two deeper views of the terminal report: `--inverted`, the caller chains
 * each hot function's self time came from and the tree of them printed under a report row,
 * and `--list REGEX`, the source lines of the matching functions with the time spent on each,
 * as `pprof -list` prints them. Both count on-CPU periods, like the table, and are computed
 * per distinct raw stack. */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospc.h"
#include "ospx_internal.h"

#define CALLER_LINES 3 /* --inverted: callers shown under each row */

#define LIST_FUNCTIONS  5   /* at most this many functions listed */
#define LIST_CONTEXT    2   /* source lines shown around the sampled ones */
#define LIST_MAX_SPAN   400 /* wider than this, only the sampled lines are shown */
#define LIST_LINE_BYTES 4096

/* On-CPU periods per raw stack. NULL when out of memory. */
static uint64_t *on_cpu_per_stack(const struct ospx_model *model)
{
    const struct ospx_raw *raw = model->raw;
    uint64_t *weights = calloc(raw->stack_count + 1, sizeof *weights);
    if (weights == NULL)
        return NULL;
    for (size_t i = 0; i < raw->sample_count; i++)
        if (raw->samples[i].state == 0)
            weights[raw->samples[i].stack] += raw->samples[i].weight;
    return weights;
}

/* ---- --inverted ---- */

/* Per distinct (leaf, process, chain): the chain's functions in `pool`, from the leaf's caller
 * out to the stack's root, a run of one function (inline levels, direct recursion) once. The
 * process is the row the report shows the stack's process in when it shows processes (more
 * than one sampled), else 0. */
struct ospx__callers {
    uint32_t *pool;
    struct entry {
        uint32_t leaf, process;
        struct ospx__chain chain;
    } * entries;
    size_t count;
};

static int compare_entries(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->leaf != y->leaf)
        return x->leaf < y->leaf ? -1 : 1;
    if (x->process != y->process)
        return x->process < y->process ? -1 : 1;
    size_t common = x->chain.length < y->chain.length ? x->chain.length : y->chain.length;
    for (size_t k = 0; k < common; k++)
        if (x->chain.functions[k] != y->chain.functions[k])
            return x->chain.functions[k] < y->chain.functions[k] ? -1 : 1;
    /* a chain that is another's prefix (its stack ends sooner) first */
    return (x->chain.length > y->chain.length) - (x->chain.length < y->chain.length);
}

struct ospx__callers *ospx__callers_build(const struct ospx_model *model)
{
    const struct ospx_raw *raw = model->raw;
    struct ospx__callers *callers = calloc(1, sizeof *callers);
    uint64_t *weights = on_cpu_per_stack(model);
    uint32_t *function_of = ospx__frame_functions(model);
    size_t slots_total = 0;
    for (uint32_t s = 0; weights != NULL && s < raw->stack_count; s++) {
        size_t depth;
        ospx__stack_slots(model, s, &depth);
        slots_total += weights[s] > 0 ? depth : 0;
    }
    if (callers != NULL) {
        callers->entries = malloc((raw->stack_count + 1) * sizeof *callers->entries);
        callers->pool = malloc((slots_total + 1) * sizeof *callers->pool);
    }
    if (callers == NULL || callers->entries == NULL || callers->pool == NULL || weights == NULL ||
        function_of == NULL) {
        free(weights);
        free(function_of);
        ospx__callers_free(callers);
        return NULL;
    }
    size_t used = 0;
    for (uint32_t s = 0; s < raw->stack_count; s++) {
        size_t depth;
        const struct ospx_slot *slots = ospx__stack_slots(model, s, &depth);
        if (weights[s] == 0 || depth == 0)
            continue;
        uint32_t leaf = function_of[slots[0].frame], last = leaf;
        uint32_t *chain = callers->pool + used;
        size_t length = 0;
        for (size_t k = 1; k < depth; k++) {
            uint32_t f = function_of[slots[k].frame];
            if (f == OSPX_NO_FUNCTION || f == last)
                continue;
            chain[length++] = last = f;
        }
        used += length;
        uint32_t process =
            model->processes_sampled > 1 ? ospx__process_row(raw, raw->stacks[s].process) : 0;
        callers->entries[callers->count++] =
            (struct entry){leaf, process, {chain, length, weights[s]}};
    }
    qsort(callers->entries, callers->count, sizeof *callers->entries, compare_entries);
    size_t merged = 0;
    for (size_t i = 0; i < callers->count; i++) {
        if (merged > 0 && compare_entries(&callers->entries[merged - 1], &callers->entries[i]) == 0)
            callers->entries[merged - 1].chain.self += callers->entries[i].chain.self;
        else
            callers->entries[merged++] = callers->entries[i];
    }
    callers->count = merged;
    free(weights);
    free(function_of);
    return callers;
}

size_t ospx__callers_chains(const struct ospx__callers *callers, uint32_t function,
                            uint32_t process, struct ospx__chain **out)
{
    *out = NULL;
    if (callers == NULL)
        return 0;
    size_t lo = 0, hi = callers->count;
    while (lo < hi) { /* the first entry of `function` */
        size_t mid = lo + (hi - lo) / 2;
        const struct entry *entry = &callers->entries[mid];
        if (entry->leaf < function || (entry->leaf == function && entry->process < process))
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t count = 0;
    while (lo + count < callers->count && callers->entries[lo + count].leaf == function &&
           callers->entries[lo + count].process == process)
        count++;
    *out = count > 0 ? malloc(count * sizeof **out) : NULL;
    if (*out == NULL)
        return 0;
    for (size_t i = 0; i < count; i++)
        (*out)[i] = callers->entries[lo + i].chain;
    return count;
}

void ospx__callers_free(struct ospx__callers *callers)
{
    if (callers == NULL)
        return;
    OSPC_FREE_ALL(callers->entries, callers->pool, callers);
}

/* ---- --list ---- */

int ospx__listing_check(const char *expression, struct ospx_error *err)
{
    regex_t pattern;
    int rc = regcomp(&pattern, expression, REG_EXTENDED | REG_NOSUB);
    if (rc == 0) {
        regfree(&pattern);
        return 0;
    }
    char why[200];
    regerror(rc, &pattern, why, sizeof why);
    return ospx_error_set(err, EINVAL, "", 0, 0, "--list '%s': %s", expression, why);
}

struct line_time {
    int line;
    uint32_t stack;
    int leaf;
};

static int compare_line_times(const void *a, const void *b)
{
    const struct line_time *x = a, *y = b;
    if (x->line != y->line)
        return (x->line > y->line) - (x->line < y->line);
    if (x->stack != y->stack)
        return (x->stack > y->stack) - (x->stack < y->stack);
    return y->leaf - x->leaf; /* the leaf occurrence of a (line, stack) first */
}

/* Per source line of function f: flat (periods with that line as the leaf position) and cum
 * (periods with it anywhere on the stack, once per sample). */
struct line_row {
    int line;
    uint64_t flat, cum;
};

/* The function's time that no line can be given: `flat` with its leaf position lineless, `cum`
 * with the function on the stack at no position with a line (once per sample). */
struct unlined {
    uint64_t flat, cum;
};

static size_t line_rows(const struct ospx_model *model, const uint64_t *weights,
                        const uint32_t *function_of, uint32_t f, struct line_row **rows,
                        struct unlined *unlined)
{
    const struct ospx_raw *raw = model->raw;
    size_t count = 0, capacity = 64;
    struct line_time *times = malloc(capacity * sizeof *times);
    *rows = NULL;
    *unlined = (struct unlined){0, 0};
    for (uint32_t s = 0; times != NULL && s < raw->stack_count; s++) {
        size_t depth;
        const struct ospx_slot *slots = ospx__stack_slots(model, s, &depth);
        int present = 0, lined = 0;
        for (size_t k = 0; weights[s] > 0 && k < depth; k++) {
            int line = slots[k].line;
            if (function_of[slots[k].frame] != f)
                continue;
            present = 1;
            if (line <= 0 && k == 0)
                unlined->flat += weights[s];
            if (line <= 0)
                continue;
            lined = 1;
            if (ospx__grow(&times, &capacity, count, sizeof *times, 64) != 0) {
                free(times);
                return 0;
            }
            times[count++] = (struct line_time){line, s, k == 0};
        }
        if (present && !lined)
            unlined->cum += weights[s];
    }
    if (times == NULL)
        return 0;
    qsort(times, count, sizeof *times, compare_line_times);
    *rows = calloc(count + 1, sizeof **rows);
    size_t n = 0;
    for (size_t i = 0; *rows != NULL && i < count; i++) {
        if (n == 0 || (*rows)[n - 1].line != times[i].line)
            (*rows)[n++] = (struct line_row){times[i].line, 0, 0};
        if (i > 0 && times[i - 1].line == times[i].line && times[i - 1].stack == times[i].stack)
            continue; /* once per sample */
        (*rows)[n - 1].cum += weights[times[i].stack];
        if (times[i].leaf)
            (*rows)[n - 1].flat += weights[times[i].stack];
    }
    free(times);
    return *rows != NULL ? n : 0;
}

/* `text` with its tabs expanded to 8-column stops (malloc'd; NULL when out of memory). */
static char *expand_tabs(const char *text)
{
    size_t tabs = 0;
    for (const char *p = text; *p != '\0'; p++)
        tabs += *p == '\t';
    char *out = malloc(strlen(text) + 7 * tabs + 1);
    if (out == NULL)
        return NULL;
    size_t column = 0, n = 0;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '\t') {
            do
                out[n++] = ' ';
            while (++column % 8 != 0);
        } else {
            out[n++] = *p;
            column += ((unsigned char)*p & 0xC0) != 0x80;
        }
    }
    out[n] = '\0';
    return out;
}

/* The text of lines first..last of a source file (a regular file only), NULL where unknown.
 * The path is the profile's and may be in /tmp: opened without blocking (a FIFO swapped in
 * after a stat would hang the report), then checked. */
static char **source_lines(const char *path, int first, int last)
{
    struct stat info;
    int fd = path[0] != '\0' ? open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) : -1;
    if (fd >= 0 && (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))) {
        close(fd);
        fd = -1;
    }
    FILE *file = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (file == NULL) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char **lines = calloc((size_t)(last - first + 1), sizeof *lines);
    char buffer[LIST_LINE_BYTES];
    for (int number = 1; lines != NULL && number <= last && fgets(buffer, sizeof buffer, file);
         number++) {
        size_t length = strlen(buffer);
        int whole = length > 0 && buffer[length - 1] == '\n';
        buffer[strcspn(buffer, "\r\n")] = '\0';
        if (number >= first)
            lines[number - first] = expand_tabs(buffer);
        /* the rest of an over-long line is not another line */
        while (!whole && fgets(buffer, sizeof buffer, file) != NULL)
            whole = buffer[strlen(buffer) - 1] == '\n';
    }
    fclose(file);
    return lines;
}

static void format_time(char *out, size_t size, uint64_t periods, uint32_t rate)
{
    double seconds = rate > 0 ? (double)periods / rate : 0;
    if (periods == 0)
        snprintf(out, size, ".");
    else if (seconds >= 1)
        snprintf(out, size, "%.2fs", seconds);
    else
        snprintf(out, size, "%.0fms", seconds * 1000);
}

static void print_function_listing(FILE *out, const struct ospx_model *model,
                                   const struct ospx_function_stat *fn, const struct line_row *rows,
                                   size_t count, const struct unlined *unlined)
{
    uint32_t rate = model->raw->rate_hz;
    char flat[32], cum[32], text[LIST_LINE_BYTES + 64];
    snprintf(text, sizeof text, "ROUTINE ======================== %s in %s", fn->name,
             fn->file[0] != '\0' ? fn->file : "(no source file)");
    ospc_printable(text);
    fprintf(out, "%s\n", text);
    format_time(flat, sizeof flat, fn->self, rate);
    format_time(cum, sizeof cum, fn->total, rate);
    fprintf(out, "%10s %10s (flat, cum) %.1f%% of CPU\n", flat, cum,
            model->on_cpu_samples > 0 ? 100.0 * (double)fn->total / (double)model->on_cpu_samples
                                      : 0.0);
    /* Time the lines below cannot show (addresses the line table does not cover): said, not
     * silently left out. */
    if (unlined->cum > 0) {
        format_time(flat, sizeof flat, unlined->flat, rate);
        format_time(cum, sizeof cum, unlined->cum, rate);
        fprintf(out, "%10s %10s      ?: (no line: %.1f%% of this function's time)\n", flat, cum,
                fn->total > 0 ? 100.0 * (double)unlined->cum / (double)fn->total : 0.0);
    }
    if (count == 0)
        return;
    int first = rows[0].line - LIST_CONTEXT, last = rows[count - 1].line + LIST_CONTEXT;
    first = first < 1 ? 1 : first;
    int contiguous = last - first <= LIST_MAX_SPAN;
    char **source = contiguous ? source_lines(fn->file, first, last) : NULL;
    size_t r = 0;
    for (int line = first; line <= last; line++) {
        const struct line_row *row = r < count && rows[r].line == line ? &rows[r++] : NULL;
        if (row == NULL && !(contiguous && source != NULL))
            continue;
        format_time(flat, sizeof flat, row != NULL ? row->flat : 0, rate);
        format_time(cum, sizeof cum, row != NULL ? row->cum : 0, rate);
        const char *code =
            source != NULL && source[line - first] != NULL ? source[line - first] : "";
        snprintf(text, sizeof text, "%10s %10s %6d: %s", flat, cum, line, code);
        ospc_printable(text);
        fprintf(out, "%s\n", text);
        if (!contiguous && row == NULL)
            break;
    }
    for (int line = first; source != NULL && line <= last; line++)
        free(source[line - first]);
    free(source);
}

int ospx__print_listing(FILE *out, size_t width, const struct ospx_model *model,
                        const char *expression)
{
    (void)width; /* source lines are printed whole, as pprof does */
    regex_t pattern;
    if (regcomp(&pattern, expression, REG_EXTENDED | REG_NOSUB) != 0)
        return -EINVAL;
    uint64_t *weights = on_cpu_per_stack(model);
    uint32_t *function_of = ospx__frame_functions(model);
    int rc = weights != NULL && function_of != NULL ? 0 : -ENOMEM;
    size_t listed = 0;
    for (size_t i = 0; rc == 0 && i < model->function_count && listed < LIST_FUNCTIONS; i++) {
        const struct ospx_function_stat *fn = &model->functions[i];
        if (fn->total == 0 || regexec(&pattern, fn->name, 0, NULL, 0) != 0)
            continue;
        struct line_row *rows;
        struct unlined unlined;
        size_t count = line_rows(model, weights, function_of, (uint32_t)i, &rows, &unlined);
        print_function_listing(out, model, fn, rows, count, &unlined);
        free(rows);
        listed++;
    }
    if (rc == 0 && listed == 0) {
        char text[600];
        snprintf(text, sizeof text, "--list: no function with CPU time matches '%s'", expression);
        ospc_printable(text);
        fprintf(out, "%s\n", text);
    }
    regfree(&pattern);
    free(weights);
    free(function_of);
    return rc;
}

/* --inverted: under a row, the caller chains its self time came from, as a tree (perf report
 * --no-children -G, pprof's inverted flame graph, read in a terminal): each line a caller with
 * the share of the row's self time that came through it; a caller through which all of its
 * line's time came from one caller goes on the same line, "← 60.0%  parse  p.c:40  ← load ←
 * main", so a single chain is one line whatever its depth (stacks that end sooner, cut, do
 * not part it: the share is the first caller's); where the callers part, each goes
 * on a line of its own, indented under the caller they share. At most CALLER_LINES callers
 * under one caller (the others summed on one line, "… 4 more callers"), at most TREE_LINES
 * lines under a row. */
#define TREE_LINES  12
#define TREE_INDENT 3

struct caller_tree {
    FILE *out;
    size_t width;
    const struct ospx_model *model;
    const struct ospx__chain *chains;
    uint64_t row_self;
    const char *here;
    size_t lines; /* printed under this row */
};

/* The callers at `level` of the chains [lo, hi) (which share their first `level` callers),
 * most time first. */
static void print_caller_level(struct caller_tree *tree, size_t lo, size_t hi, size_t level,
                               size_t indent)
{
    struct group {
        size_t lo, hi;
        uint64_t self;
    } groups[CALLER_LINES + 1];
    size_t shown = 0, others = 0;
    uint64_t others_self = 0;
    for (size_t i = lo; i < hi;) {
        const struct ospx__chain *first = &tree->chains[i];
        struct group group = {i, i, 0};
        while (group.hi < hi &&
               (first->length > level
                    ? tree->chains[group.hi].length > level &&
                          tree->chains[group.hi].functions[level] == first->functions[level]
                    : tree->chains[group.hi].length <= level))
            group.self += tree->chains[group.hi++].self;
        i = group.hi;
        /* keep the CALLER_LINES heaviest, heaviest first */
        size_t at = shown < CALLER_LINES ? shown++ : CALLER_LINES;
        if (at == CALLER_LINES && group.self <= groups[CALLER_LINES - 1].self) {
            others++;
            others_self += group.self;
            continue;
        }
        if (at == CALLER_LINES) {
            others++;
            others_self += groups[CALLER_LINES - 1].self;
            at = CALLER_LINES - 1;
        }
        while (at > 0 && groups[at - 1].self < group.self) {
            groups[at] = groups[at - 1];
            at--;
        }
        groups[at] = group;
    }
    for (size_t g = 0; g < shown && tree->lines < TREE_LINES; g++) {
        const struct group *group = &groups[g];
        const struct ospx__chain *first = &tree->chains[group->lo];
        char line[2048], location[512] = "";
        int used;
        if (first->length <= level) {
            used =
                snprintf(line, sizeof line, "%*s ← %5.1f%%  %s", (int)indent, "",
                         ospx__percent_of(group->self, tree->row_self),
                         level == 0 ? "(no caller: the stack ends here)" : "(the stack ends here)");
            ospx__emit(tree->out, tree->width, NULL, line);
            tree->lines++;
            continue;
        }
        const struct ospx_function_stat *fn = &tree->model->functions[first->functions[level]];
        char name[1024];
        ospx_short_name(name, sizeof name, fn->name);
        ospx__report_location(location, sizeof location, tree->model, fn, tree->here);
        used = snprintf(line, sizeof line, "%*s ← %5.1f%%  %s%s%s", (int)indent, "",
                        ospx__percent_of(group->self, tree->row_self), name,
                        location[0] != '\0' ? "  " : "", location);
        /* one way on: its callers on this line */
        size_t next = level + 1;
        for (;;) {
            int same = 1;
            size_t going = 0; /* stacks that end here do not part the way */
            for (size_t i = group->lo; i < group->hi && same; i++) {
                if (tree->chains[i].length <= next)
                    continue;
                going++;
                same =
                    tree->chains[i].functions[next] == tree->chains[group->hi - 1].functions[next];
            }
            same = same && going > 0;
            if (!same || used <= 0 || (size_t)used >= sizeof line)
                break;
            char caller[1024];
            ospx_short_name(
                caller, sizeof caller,
                tree->model->functions[tree->chains[group->hi - 1].functions[next]].name);
            used += snprintf(line + used, sizeof line - (size_t)used, "%s ← %s",
                             next == level + 1 ? " " : "", caller);
            next++;
        }
        ospx__emit(tree->out, tree->width, NULL, line);
        tree->lines++;
        /* where they part (or some stacks end here while others go on) */
        int ends = 1;
        for (size_t i = group->lo; i < group->hi && ends; i++)
            ends = tree->chains[i].length <= next;
        if (!ends)
            print_caller_level(tree, group->lo, group->hi, next, indent + TREE_INDENT);
    }
    if (others > 0 && tree->lines < TREE_LINES) {
        char line[256];
        snprintf(line, sizeof line, "%*s ← %5.1f%%  … %zu more %s", (int)indent, "",
                 ospx__percent_of(others_self, tree->row_self), others,
                 others == 1 ? "caller" : "callers");
        ospx__emit(tree->out, tree->width, NULL, line);
        tree->lines++;
    }
}

void ospx__report_callers(FILE *out, size_t width, const struct ospx_model *model,
                          const struct ospx__callers *callers, const struct ospx_function_stat *fn,
                          uint32_t process, uint64_t self, const char *here)
{
    struct ospx__chain *chains;
    size_t count =
        ospx__callers_chains(callers, (uint32_t)(fn - model->functions), process, &chains);
    struct caller_tree tree = {out, width, model, chains, self, here, 0};
    if (count > 0 && self > 0)
        print_caller_level(&tree, 0, count, 0, OSPX__BAR_CELLS);
    free(chains);
}
