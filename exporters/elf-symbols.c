/* elf-symbols.c — the names of an object without debug information, read from its dynamic
 * symbol table in this process: what llvm-symbolizer would answer for it, byte for byte, without
 * the conversation (the benchmark's 50 stripped libraries were 0.17 s of waiting for it).
 *
 * Only an object whose answers are its symbol table alone is read here: a 64-bit little-endian
 * ET_DYN or ET_EXEC object of x86_64 or arm64 with no .symtab (llvm-symbolizer reads the
 * dynamic table only when .symtab has no symbol; .symtab's local symbols also name a file),
 * no DWARF (.debug_* or .zdebug_*), no MiniDebugInfo (.gnu_debugdata), and no separate debug
 * file where llvm-symbolizer looks for one (the .gnu_debuglink name beside the object, in its
 * .debug/ folder and under /usr/lib/debug/<dir>/; /usr/lib/debug/.build-id/xx/rest.debug),
 * no debuginfod server named (DEBUGINFOD_URLS) and no debuginfod client cache. Anything else
 * — another layout, a table this does not read, an odd section index — is left to
 * llvm-symbolizer.
 *
 * The symbol an address gets is llvm-symbolizer's (SymbolizableObjectFile): the defined
 * symbols (a section index below SHN_LORESERVE) of type NOTYPE, FUNC, OBJECT or GNU_IFUNC
 * (arm64's mapping symbols $x and $d left out), sorted by address and size, stably (the
 * table's order after), one per address: the last of that order (the largest size; of aliases
 * of one size, the last in the table: libgomp's GOMP_parallel_loop_dynamic, not the
 * GOMP_parallel_loop_nonmonotonic_dynamic before it). An address gets the last symbol at or
 * below it, unless that symbol has a size and ends at or before the address. A name the
 * symbolizer would demangle (ospx__elf_symbols_mangled) is not answered here: its demangler is
 * not the C++ runtime's, and their spellings differ (lambdas, clones). The file comes from a
 * profile: every offset is checked against its size. */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ospc.h"
#include "ospx_internal.h"

/* The mapped file and its section headers, checked. */
struct mapped {
    const unsigned char *data;
    size_t size;
    const Elf64_Ehdr *header;
    const Elf64_Shdr *sections;
    size_t section_count;
    const char *section_names; /* .shstrtab */
    size_t section_names_size;
};

/* The NUL-terminated string at `offset` of a string table of `size` bytes, or NULL. */
static const char *table_string(const char *table, size_t size, uint64_t offset)
{
    if (offset >= size || memchr(table + offset, '\0', size - offset) == NULL)
        return NULL;
    return table + offset;
}

/* Bytes [offset, offset + length) of the file, or NULL when they are not all in it. */
static const unsigned char *file_bytes(const struct mapped *m, uint64_t offset, uint64_t length)
{
    if (offset > m->size || length > m->size - offset)
        return NULL;
    return m->data + offset;
}

/* Whether the object's layout is one this file reads: 1, else 0. */
static int read_layout(struct mapped *m)
{
    if (m->size < sizeof(Elf64_Ehdr))
        return 0;
    const Elf64_Ehdr *h = (const Elf64_Ehdr *)m->data;
    if (memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64 ||
        h->e_ident[EI_DATA] != ELFDATA2LSB || (h->e_type != ET_DYN && h->e_type != ET_EXEC) ||
        (h->e_machine != EM_X86_64 && h->e_machine != EM_AARCH64) ||
        h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shnum == 0 || h->e_shstrndx == SHN_UNDEF ||
        h->e_shstrndx >= h->e_shnum)
        return 0;
    m->header = h;
    m->sections =
        (const Elf64_Shdr *)file_bytes(m, h->e_shoff, (uint64_t)h->e_shnum * sizeof(Elf64_Shdr));
    if (m->sections == NULL || h->e_shoff % 8 != 0)
        return 0;
    m->section_count = h->e_shnum;
    const Elf64_Shdr *names = &m->sections[h->e_shstrndx];
    m->section_names = (const char *)file_bytes(m, names->sh_offset, names->sh_size);
    m->section_names_size = names->sh_size;
    return m->section_names != NULL && names->sh_type != SHT_NOBITS;
}

/* Whether a file is there to be read. */
static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Whether llvm-symbolizer would find a separate debug file for the object at `path`, of
 * .gnu_debuglink `link` (NULL: none) and build id `id` (hex, "" when none). */
static bool separate_debug_file(const char *path, const char *link, const char *id)
{
    char candidate[4096];
    if (id[0] != '\0' && id[1] != '\0' &&
        snprintf(candidate, sizeof candidate, "/usr/lib/debug/.build-id/%.2s/%s.debug", id,
                 id + 2) < (int)sizeof candidate &&
        exists(candidate))
        return true;
    if (link == NULL)
        return false;
    const char *slash = strrchr(path, '/');
    int dir = slash != NULL ? (int)(slash - path) : 1;
    const char *dir_text = slash != NULL ? path : ".";
    const char *forms[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        int length = snprintf(candidate, sizeof candidate, forms[i], dir, dir_text, link);
        if (length < 0 || length >= (int)sizeof candidate || exists(candidate))
            return true; /* a path too long to try: not vouched for */
    }
    return false;
}

/* Whether llvm-symbolizer's debuginfod client cache is there (DEBUGINFOD_CACHE_PATH, else
 * llvm-debuginfod/client in $XDG_CACHE_HOME or ~/.cache): it looks there by build id even with
 * no server named. */
static bool debuginfod_cache(void)
{
    const char *set = getenv("DEBUGINFOD_CACHE_PATH");
    if (set != NULL && set[0] != '\0')
        return exists(set);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char path[4096];
    if (xdg != NULL && xdg[0] != '\0')
        snprintf(path, sizeof path, "%s/llvm-debuginfod/client", xdg);
    else if (home != NULL && home[0] != '\0')
        snprintf(path, sizeof path, "%s/.cache/llvm-debuginfod/client", home);
    else
        return false;
    return exists(path);
}

/* The object's build id in hex from its SHT_NOTE sections ("" when none). */
static void build_id(const struct mapped *m, char *out, size_t size)
{
    out[0] = '\0';
    for (size_t i = 0; i < m->section_count; i++) {
        const Elf64_Shdr *s = &m->sections[i];
        if (s->sh_type != SHT_NOTE)
            continue;
        const unsigned char *p = file_bytes(m, s->sh_offset, s->sh_size);
        for (uint64_t at = 0; p != NULL && s->sh_size - at >= sizeof(Elf64_Nhdr);) {
            Elf64_Nhdr note;
            memcpy(&note, p + at, sizeof note);
            uint64_t name = (note.n_namesz + 3u) & ~3u, desc = (note.n_descsz + 3u) & ~3u;
            at += sizeof note;
            if (name > s->sh_size - at || desc > s->sh_size - at - name)
                break;
            if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
                memcmp(p + at, "GNU", 4) == 0 && note.n_descsz * 2 < size) {
                for (uint32_t k = 0; k < note.n_descsz; k++)
                    snprintf(out + 2 * k, 3, "%02x", p[at + name + k]);
                return;
            }
            at += name + desc;
        }
    }
}

/* Whether the answers are the dynamic symbol table's alone (the file's header comment); then
 * its index in *dynsym. */
static bool symbols_only(const struct mapped *m, const char *path, size_t *dynsym)
{
    const char *link = NULL;
    *dynsym = 0;
    for (size_t i = 0; i < m->section_count; i++) {
        const Elf64_Shdr *s = &m->sections[i];
        const char *name = table_string(m->section_names, m->section_names_size, s->sh_name);
        if (name == NULL || s->sh_type == SHT_SYMTAB || strncmp(name, ".debug_", 7) == 0 ||
            strncmp(name, ".zdebug_", 8) == 0 || strcmp(name, ".gnu_debugdata") == 0)
            return false;
        if (s->sh_type == SHT_DYNSYM) {
            if (*dynsym != 0)
                return false;
            *dynsym = i;
        }
        if (strcmp(name, ".gnu_debuglink") == 0) {
            const char *text = (const char *)file_bytes(m, s->sh_offset, s->sh_size);
            link =
                text != NULL && s->sh_type != SHT_NOBITS ? table_string(text, s->sh_size, 0) : NULL;
            if (link == NULL)
                return false;
        }
    }
    const char *servers = getenv("DEBUGINFOD_URLS");
    if (*dynsym == 0 || (servers != NULL && servers[0] != '\0') || debuginfod_cache())
        return false;
    char id[OSPC_BUILD_ID_SIZE];
    build_id(m, id, sizeof id);
    return !separate_debug_file(path, link, id);
}

/* The symbols' order: address, then size, then the table's order (llvm-symbolizer's stable
 * sort by address and size). */
static int compare_symbols(const void *a, const void *b)
{
    const struct ospx__elf_symbol *x = a, *y = b;
    if (x->address != y->address)
        return x->address < y->address ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* The dynamic table's symbols llvm-symbolizer keeps, one per address, into `out`; 1, 0 when
 * the table is one this file does not read, -ENOMEM. */
static int read_table(const struct mapped *m, size_t dynsym, struct ospx__elf_symbols *out)
{
    const Elf64_Shdr *table = &m->sections[dynsym];
    if (table->sh_entsize != sizeof(Elf64_Sym) || table->sh_link == 0 ||
        table->sh_link >= m->section_count || table->sh_type == SHT_NOBITS)
        return 0;
    const Elf64_Shdr *strings_section = &m->sections[table->sh_link];
    const char *strings =
        (const char *)file_bytes(m, strings_section->sh_offset, strings_section->sh_size);
    const unsigned char *rows = file_bytes(m, table->sh_offset, table->sh_size);
    if (strings == NULL || rows == NULL || strings_section->sh_type != SHT_STRTAB ||
        table->sh_size % sizeof(Elf64_Sym) != 0)
        return 0;
    size_t count = table->sh_size / sizeof(Elf64_Sym);
    out->symbols = malloc((count > 0 ? count : 1) * sizeof *out->symbols);
    if (out->symbols == NULL)
        return -ENOMEM;
    out->count = 0;
    for (size_t i = 1; i < count; i++) { /* the first is the null symbol */
        Elf64_Sym symbol;
        memcpy(&symbol, rows + i * sizeof symbol, sizeof symbol);
        if (symbol.st_shndx == SHN_XINDEX)
            return 0;
        unsigned type = ELF64_ST_TYPE(symbol.st_info);
        if (symbol.st_shndx == SHN_UNDEF || symbol.st_shndx >= SHN_LORESERVE ||
            symbol.st_shndx >= m->section_count ||
            (type != STT_NOTYPE && type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC))
            continue;
        const char *name = table_string(strings, strings_section->sh_size, symbol.st_name);
        if (name == NULL)
            return 0;
        if (m->header->e_machine == EM_AARCH64 && name[0] == '$' &&
            (name[1] == 'x' || name[1] == 'd'))
            continue;
        out->symbols[out->count++] =
            (struct ospx__elf_symbol){symbol.st_value, symbol.st_size, name, i};
    }
    qsort(out->symbols, out->count, sizeof *out->symbols, compare_symbols);
    size_t kept = 0;
    for (size_t i = 0; i < out->count; i++) {
        if (i + 1 < out->count && out->symbols[i + 1].address == out->symbols[i].address)
            continue; /* the last of one address stays */
        out->symbols[kept++] = out->symbols[i];
    }
    out->count = kept;
    return 1;
}

int ospx__elf_symbols_read(const char *path, struct ospx__elf_symbols *out)
{
    memset(out, 0, sizeof *out);
    size_t size;
    void *data = ospx__map_file(path, &size);
    if (data == NULL)
        return 0;
    struct mapped m = {.data = data, .size = size};
    size_t dynsym = 0;
    int rc = read_layout(&m) && symbols_only(&m, path, &dynsym) ? read_table(&m, dynsym, out) : 0;
    if (rc <= 0) {
        free(out->symbols);
        munmap(data, size);
        memset(out, 0, sizeof *out);
        return rc;
    }
    out->map = data;
    out->map_size = size;
    return 1;
}

const char *ospx__elf_symbols_name(const struct ospx__elf_symbols *symbols, uint64_t address)
{
    size_t after = ospc_rows_before(symbols->symbols, symbols->count, sizeof *symbols->symbols,
                                    offsetof(struct ospx__elf_symbol, address), address, true);
    if (after == 0)
        return NULL;
    const struct ospx__elf_symbol *s = &symbols->symbols[after - 1];
    if (s->size != 0 && address - s->address >= s->size)
        return NULL;
    return s->name;
}

bool ospx__elf_symbols_mangled(const char *name)
{
    return strncmp(name, "_Z", 2) == 0 || strncmp(name, "__Z", 3) == 0 ||
           strncmp(name, "___Z", 4) == 0 || strncmp(name, "_R", 2) == 0 ||
           strncmp(name, "_D", 2) == 0 || name[0] == '?' || name[0] == '$';
}

void ospx__elf_symbols_free(struct ospx__elf_symbols *symbols)
{
    free(symbols->symbols);
    if (symbols->map != NULL)
        munmap(symbols->map, symbols->map_size);
    memset(symbols, 0, sizeof *symbols);
}
