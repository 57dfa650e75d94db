/* top-symbols.c — what `osprey top` keeps of the stream (daemon/stream.c): the images, the
 * stacks, and for each address the functions the report's symbolizer (ospx_symbolize) named
 * it with, asked once: a refresh symbolizes only the addresses no earlier one saw, in one run
 * of the symbolizer, so a steady view costs a hash look-up per new stack and nothing else.
 *
 * A function is a name in an object (two objects' `init` are two); its location is the source
 * file's name, else the object's. A return address is looked up one byte back (in its call),
 * as the report does it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "osp_unwind_step.h"
#include "ospc.h"
#include "osprey_top.h"
#include "ospx.h"

#define PENDING UINT32_MAX /* an address asked for, not answered yet */

struct top_stack {
    uint64_t *pcs;
    uint32_t depth;
    uint32_t *functions; /* leaf first, inline levels innermost first */
    uint32_t function_count;
};

struct chain {
    uint32_t first, count; /* in function_pool */
};

struct osprey_top_symbols {
    int32_t pid; /* the target, 0 when not said */
    struct ospx_image *images;
    size_t image_count, images_cap;
    struct top_stack *stacks;
    size_t stack_count, stacks_cap, resolved; /* stacks[0..resolved) have their functions */
    /* every address looked up: its chain (PENDING: asked, not answered yet) */
    uint64_t *addresses;
    uint32_t *address_chains;
    size_t address_count, addresses_cap, address_chains_cap;
    struct ospc_index address_index;
    struct chain *chains;
    size_t chain_count, chains_cap;
    uint32_t *function_pool;
    size_t pool_count, pool_cap;
    /* functions, by "name\x1fimage" */
    char **function_keys, **names, **locations;
    size_t function_count, keys_cap, names_cap, locations_cap;
    struct ospc_index function_index;
    FILE *quiet;   /* the symbolizer's warnings: not on the screen */
    int32_t *tids; /* threads, by the stream's index */
    char **thread_labels;
    size_t thread_count, tids_cap, labels_cap;
};

static int grow(void **array, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap > 0 ? *cap * 2 : 64;
    while (cap2 < need)
        cap2 *= 2;
    void *grown = realloc(*array, cap2 * size);
    if (grown == NULL)
        return -ENOMEM;
    memset((char *)grown + *cap * size, 0, (cap2 - *cap) * size);
    *array = grown;
    *cap = cap2;
    return 0;
}

static uint64_t hash_address(uint64_t address)
{
    return ospc_hash_bytes(OSPC_HASH_SEED, &address, sizeof address);
}
static uint64_t hash_of_address(uint32_t entry, void *context)
{
    return hash_address(((const struct osprey_top_symbols *)context)->addresses[entry]);
}
static uint64_t hash_of_function(uint32_t entry, void *context)
{
    const char *key = ((const struct osprey_top_symbols *)context)->function_keys[entry];
    return ospc_hash_bytes(OSPC_HASH_SEED, key, strlen(key));
}

/* The chain of `address` (PENDING when asked but not answered), or NULL when never asked. */
static uint32_t *address_chain(struct osprey_top_symbols *s, uint64_t address, size_t *slot)
{
    *slot = ospc_index_start(&s->address_index, hash_address(address));
    for (uint32_t e; (e = ospc_index_entry(&s->address_index, *slot)) != UINT32_MAX;
         *slot = ospc_index_next(&s->address_index, *slot))
        if (s->addresses[e] == address)
            return &s->address_chains[e];
    return NULL;
}

/* Note `address` with its chain. 0 or -ENOMEM. */
static int address_put(struct osprey_top_symbols *s, uint64_t address, uint32_t chain)
{
    size_t slot;
    uint32_t *known = address_chain(s, address, &slot);
    if (known != NULL) {
        *known = chain;
        return 0;
    }
    if (grow((void **)&s->addresses, &s->addresses_cap, s->address_count + 1,
             sizeof *s->addresses) != 0 ||
        grow((void **)&s->address_chains, &s->address_chains_cap, s->address_count + 1,
             sizeof *s->address_chains) != 0)
        return -ENOMEM;
    s->addresses[s->address_count] = address;
    s->address_chains[s->address_count] = chain;
    int rc =
        ospc_index_insert(&s->address_index, slot, (uint32_t)s->address_count, hash_of_address, s);
    s->address_count += rc == 0;
    return rc;
}

/* The index of function `name` of object `image` with `location`, added when new. */
static int64_t intern_function(struct osprey_top_symbols *s, const char *name, const char *image,
                               const char *location)
{
    size_t length = strlen(name) + strlen(image) + 2;
    char *key = malloc(length);
    if (key == NULL)
        return -ENOMEM;
    snprintf(key, length, "%s\x1f%s", name, image);
    size_t slot =
        ospc_index_start(&s->function_index, ospc_hash_bytes(OSPC_HASH_SEED, key, strlen(key)));
    for (uint32_t e; (e = ospc_index_entry(&s->function_index, slot)) != UINT32_MAX;
         slot = ospc_index_next(&s->function_index, slot))
        if (strcmp(s->function_keys[e], key) == 0) {
            free(key);
            return e;
        }
    size_t f = s->function_count;
    if (grow((void **)&s->function_keys, &s->keys_cap, f + 1, sizeof(char *)) != 0 ||
        grow((void **)&s->names, &s->names_cap, f + 1, sizeof(char *)) != 0 ||
        grow((void **)&s->locations, &s->locations_cap, f + 1, sizeof(char *)) != 0 ||
        (s->names[f] = strdup(name)) == NULL || (s->locations[f] = strdup(location)) == NULL) {
        free(s->names != NULL && f < s->names_cap ? s->names[f] : NULL);
        free(key);
        return -ENOMEM;
    }
    s->function_keys[f] = key;
    if (ospc_index_insert(&s->function_index, slot, (uint32_t)f, hash_of_function, s) != 0) {
        free(s->names[f]);
        free(s->locations[f]);
        free(key);
        return -ENOMEM;
    }
    s->function_count++;
    return (int64_t)f;
}

struct osprey_top_symbols *osprey_top_symbols_new(void)
{
    struct osprey_top_symbols *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    if (ospc_index_init(&s->address_index, 1024) != 0 ||
        ospc_index_init(&s->function_index, 256) != 0) {
        osprey_top_symbols_free(s);
        return NULL;
    }
    s->quiet = fopen("/dev/null", "we");
    return s;
}

void osprey_top_symbols_free(struct osprey_top_symbols *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->image_count; i++) {
        free(s->images[i].path);
        free(s->images[i].arch);
        free(s->images[i].build_id);
    }
    for (size_t i = 0; i < s->stack_count; i++)
        OSPC_FREE_ALL(s->stacks[i].pcs, s->stacks[i].functions);
    for (size_t f = 0; f < s->function_count; f++)
        OSPC_FREE_ALL(s->function_keys[f], s->names[f], s->locations[f]);
    for (size_t t = 0; t < s->thread_count; t++)
        free(s->thread_labels[t]);
    ospc_index_free(&s->address_index);
    ospc_index_free(&s->function_index);
    OSPC_FREE_ALL(s->tids, s->thread_labels, s->images, s->stacks, s->addresses, s->address_chains,
                  s->chains, s->function_pool, s->function_keys, s->names, s->locations);
    if (s->quiet != NULL)
        fclose(s->quiet);
    free(s);
}

void osprey_top_symbols_target(struct osprey_top_symbols *s, int32_t pid)
{
    s->pid = pid;
}

/* The image's build id, read as its process sees the file (the report's symbolizer then finds
 * the object through /proc/PID/root); only a file whose code is where the image's is. */
static char *image_build_id(const struct osprey_top_symbols *s, const struct ospx_image *image)
{
    char rooted[4096];
    struct ospc_elf_identity identity;
    if (ospc_path_in_root(s->pid, image->path, rooted, sizeof rooted) != 0 ||
        ospc_elf_identity(rooted, &identity, NULL, 0) != 0 || !identity.has_text ||
        identity.build_id[0] == '\0' || identity.text_vaddr + image->slide != image->text)
        return NULL;
    return strdup(identity.build_id);
}

static int add_image(struct osprey_top_symbols *s, const char *rest)
{
    struct ospx_image image;
    memset(&image, 0, sizeof image);
    int main_flag, offset = 0;
    if (sscanf(rest, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %d %n", &image.base,
               &image.slide, &image.text, &image.text_size, &main_flag, &offset) < 5 ||
        offset == 0)
        return 0;
    if (grow((void **)&s->images, &s->images_cap, s->image_count + 1, sizeof *s->images) != 0)
        return -ENOMEM;
    image.path = strdup(rest + offset);
    image.arch = strdup("");
    if (image.path == NULL || image.arch == NULL) {
        free(image.path);
        free(image.arch);
        return -ENOMEM;
    }
    image.build_id = image_build_id(s, &image);
    s->images[s->image_count++] = image;
    return 0;
}

static int add_stack(struct osprey_top_symbols *s, const char *rest)
{
    char *end;
    unsigned long long index = strtoull(rest, &end, 10);
    if (end == rest || index != s->stack_count) /* each stack once, in order */
        return 0;
    struct top_stack stack = {NULL, 0, NULL, 0};
    size_t cap = 0;
    for (const char *p = end; *p != '\0';) {
        uint64_t pc = strtoull(p, &end, 16);
        if (end == p)
            break;
        p = end;
        if (grow((void **)&stack.pcs, &cap, stack.depth + 1u, sizeof *stack.pcs) != 0) {
            free(stack.pcs);
            return -ENOMEM;
        }
        stack.pcs[stack.depth++] = pc;
    }
    if (grow((void **)&s->stacks, &s->stacks_cap, s->stack_count + 1, sizeof *s->stacks) != 0) {
        free(stack.pcs);
        return -ENOMEM;
    }
    s->stacks[s->stack_count++] = stack;
    return 0;
}

/* "thread INDEX TID LABEL": indices come in order, each once. */
static int add_thread(struct osprey_top_symbols *s, const char *rest)
{
    unsigned long index;
    int tid, consumed = 0;
    if (sscanf(rest, "%lu %d %n", &index, &tid, &consumed) < 2 || consumed == 0 ||
        index != s->thread_count)
        return 0;
    char *label = strdup(rest + consumed);
    if (label == NULL ||
        grow((void **)&s->tids, &s->tids_cap, s->thread_count + 1, sizeof *s->tids) != 0 ||
        grow((void **)&s->thread_labels, &s->labels_cap, s->thread_count + 1,
             sizeof *s->thread_labels) != 0) {
        free(label);
        return -ENOMEM;
    }
    s->tids[s->thread_count] = tid;
    s->thread_labels[s->thread_count++] = label;
    return 0;
}

size_t osprey_top_symbols_stack_count(const struct osprey_top_symbols *s)
{
    return s->stack_count;
}

size_t osprey_top_symbols_threads(const struct osprey_top_symbols *s, const int32_t **tids,
                                  const char *const **labels)
{
    *tids = s->tids;
    *labels = (const char *const *)s->thread_labels;
    return s->thread_count;
}

int osprey_top_symbols_line(struct osprey_top_symbols *s, const char *line,
                            struct osprey_top_window *window, uint64_t *now_ns, int *ended,
                            char *how, size_t how_size)
{
    if (strncmp(line, "sample ", 7) == 0) {
        unsigned long long t, stack;
        unsigned state, weight, thread = UINT32_MAX; /* a first version's line has none */
        if (sscanf(line + 7, "%llu %llu %u %u %u", &t, &stack, &state, &weight, &thread) < 4)
            return 0;
        struct osprey_top_sample sample = {t, (uint32_t)stack, weight, (uint8_t)(state != 0),
                                           thread};
        return window != NULL ? osprey_top_window_add(window, &sample) : 0;
    }
    if (strncmp(line, "thread ", 7) == 0)
        return add_thread(s, line + 7);
    if (strncmp(line, "stack ", 6) == 0)
        return add_stack(s, line + 6);
    if (strncmp(line, "image ", 6) == 0)
        return add_image(s, line + 6);
    if (strncmp(line, "flush ", 6) == 0) {
        unsigned long long t;
        if (now_ns != NULL && sscanf(line + 6, "%llu", &t) == 1)
            *now_ns = t;
        return 0;
    }
    if (strncmp(line, "end", 3) == 0 && (line[3] == ' ' || line[3] == '\0')) {
        *ended = 1;
        snprintf(how, how_size, "%s", line[3] == ' ' ? line + 4 : "");
    }
    return 0;
}

static uint64_t lookup_address(const struct top_stack *stack, uint32_t k)
{
    return k > 0 && stack->pcs[k] > 0 ? stack->pcs[k] - 1 : stack->pcs[k];
}

/* The chain of one symbolized address: its frames as functions. */
static int add_chain(struct osprey_top_symbols *s, uint64_t address, const struct ospx_symbols *sy,
                     size_t i)
{
    if (grow((void **)&s->chains, &s->chains_cap, s->chain_count + 1, sizeof *s->chains) != 0)
        return -ENOMEM;
    struct chain chain = {(uint32_t)s->pool_count, 0};
    size_t depth = sy != NULL ? sy->stack_depths[i] : 0;
    for (size_t level = 0; level < depth; level++) {
        const struct ospx_frame *frame = &sy->frames[sy->stack_slots[i][level].frame];
        const char *image = frame->image != NULL ? frame->image : "";
        /* The marker of frames a deep walk left out (`[… N frames]`) is no code: no location. */
        const char *location = frame->file != NULL && frame->file[0] != '\0'
                                   ? ospc_basename(frame->file)
                               : image[0] != '\0'                       ? ospc_basename(image)
                               : osp_unwind_left_out_is(frame->address) ? ""
                                                                        : "?";
        int64_t f = intern_function(s, frame->name, image, location);
        if (f < 0 ||
            grow((void **)&s->function_pool, &s->pool_cap, s->pool_count + 1, sizeof(uint32_t)))
            return -ENOMEM;
        s->function_pool[s->pool_count++] = (uint32_t)f;
        chain.count++;
    }
    if (sy == NULL) { /* no symbolizer: the address itself */
        char hex[32];
        snprintf(hex, sizeof hex, "0x%" PRIx64, address);
        int64_t f = intern_function(s, hex, "", "?");
        if (f < 0 ||
            grow((void **)&s->function_pool, &s->pool_cap, s->pool_count + 1, sizeof(uint32_t)))
            return -ENOMEM;
        s->function_pool[s->pool_count++] = (uint32_t)f;
        chain.count = 1;
    }
    s->chains[s->chain_count] = chain;
    return address_put(s, address, (uint32_t)s->chain_count++);
}

static int by_address(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The names of the kernel frames among `addresses` (/proc/kallsyms), sorted by address, as
 * the raw file's kernel_symbols: the symbolizer shows them as `[k] NAME`. *named of them. */
static struct ospx_kernel_symbol *kernel_symbols(const uint64_t *addresses, size_t count,
                                                 size_t *named)
{
    *named = 0;
    uint64_t *pcs = malloc(count * sizeof *pcs + 1);
    size_t n = 0;
    for (size_t i = 0; pcs != NULL && i < count; i++)
        if (addresses[i] >> 63)
            pcs[n++] = addresses[i];
    char **names = n > 0 ? calloc(n, sizeof *names) : NULL;
    struct ospx_kernel_symbol *out = names != NULL ? calloc(n, sizeof *out) : NULL;
    if (out != NULL) {
        qsort(pcs, n, sizeof *pcs, by_address);
        if (ospc_kallsyms_name("/proc/kallsyms", pcs, (uint32_t)n, names) == 0)
            for (size_t i = 0; i < n; i++) {
                if (names[i] != NULL && (*named == 0 || out[*named - 1].pc != pcs[i]))
                    out[(*named)++] = (struct ospx_kernel_symbol){pcs[i], names[i]};
                else
                    free(names[i]);
            }
    }
    free(names);
    free(pcs);
    return out;
}

/* Symbolize the `count` addresses at `addresses` in one run and keep their chains. */
static int symbolize(struct osprey_top_symbols *s, const uint64_t *addresses, size_t count)
{
    struct ospx_stack *stacks = calloc(count, sizeof *stacks);
    if (stacks == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++)
        stacks[i] = (struct ospx_stack){.pcs = (uint64_t *)&addresses[i], .depth = 1};
    struct ospx_raw raw;
    memset(&raw, 0, sizeof raw);
    raw.version = OSPX_RAW_VERSION;
    raw.pid = s->pid;
    raw.images = s->images;
    raw.image_count = s->image_count;
    raw.stacks = stacks;
    raw.stack_count = count;
    raw.kernel_symbols = kernel_symbols(addresses, count, &raw.kernel_symbol_count);
    raw.start_unix_ns = ospc_clock_ns(CLOCK_REALTIME); /* recorded by this kernel: its vDSO */
    raw.end_unix_ns = raw.start_unix_ns;
    raw.process_cpu_ns = -1;
    struct ospx_symbolize_options options;
    memset(&options, 0, sizeof options);
    options.warnings = s->quiet;
    struct ospx_symbols symbols;
    memset(&symbols, 0, sizeof symbols);
    struct ospx_error error;
    memset(&error, 0, sizeof error);
    int ok = ospx_symbolize(&raw, &options, &symbols, &error) == 0;
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++)
        rc = add_chain(s, addresses[i], ok ? &symbols : NULL, i);
    if (ok)
        ospx_symbols_free(&symbols);
    for (size_t i = 0; i < raw.kernel_symbol_count; i++)
        free(raw.kernel_symbols[i].name);
    free(raw.kernel_symbols);
    free(stacks);
    return rc;
}

int osprey_top_symbols_resolve(struct osprey_top_symbols *s)
{
    uint64_t *asked = NULL;
    size_t asked_count = 0, asked_cap = 0;
    int rc = 0;
    for (size_t i = s->resolved; i < s->stack_count && rc == 0; i++)
        for (uint32_t k = 0; k < s->stacks[i].depth && rc == 0; k++) {
            uint64_t address = lookup_address(&s->stacks[i], k);
            size_t slot;
            if (address_chain(s, address, &slot) != NULL)
                continue;
            rc = grow((void **)&asked, &asked_cap, asked_count + 1, sizeof *asked);
            if (rc == 0) {
                asked[asked_count++] = address;
                rc = address_put(s, address, PENDING);
            }
        }
    if (rc == 0 && asked_count > 0)
        rc = symbolize(s, asked, asked_count);
    free(asked);
    for (; rc == 0 && s->resolved < s->stack_count; s->resolved++) {
        struct top_stack *stack = &s->stacks[s->resolved];
        size_t cap = 0;
        for (uint32_t k = 0; k < stack->depth && rc == 0; k++) {
            size_t slot;
            const uint32_t *value = address_chain(s, lookup_address(stack, k), &slot);
            if (value == NULL || *value == PENDING)
                continue;
            const struct chain *chain = &s->chains[*value];
            rc = grow((void **)&stack->functions, &cap, stack->function_count + chain->count + 1u,
                      sizeof *stack->functions);
            for (uint32_t level = 0; rc == 0 && level < chain->count; level++)
                stack->functions[stack->function_count++] = s->function_pool[chain->first + level];
        }
    }
    return rc;
}

size_t osprey_top_symbols_stack(void *context, uint32_t stack, const uint32_t **functions)
{
    const struct osprey_top_symbols *s = context;
    if (stack >= s->resolved)
        return 0;
    *functions = s->stacks[stack].functions;
    return s->stacks[stack].function_count;
}

size_t osprey_top_symbols_functions(const struct osprey_top_symbols *s, const char *const **names,
                                    const char *const **locations)
{
    *names = (const char *const *)s->names;
    *locations = (const char *const *)s->locations;
    return s->function_count;
}
