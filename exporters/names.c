/* names.c — function names as their authors wrote them, and short for tables.
 *
 * Owns two rewrites of a symbolizer's demangled name. ospx__name_as_written: an OCaml native
 * symbol as perf's demangler writes it (`camlStdlib__Hashtbl__find_996`:
 * `Stdlib.Hashtbl.find_996`); a Rust legacy
 * symbol (`_ZN...17h<hash>E`) comes out of an Itanium demangler (llvm-symbolizer's) as
 * `rusty::main::_$u7b$$u7b$closure$u7d$$u7d$::h004013894672dc6a`; rustc's own demangler
 * (rustc-demangle) drops the hash and decodes the escapes: `rusty::main::{{closure}}`. This
 * does the same, on names whose last component is such a hash only (a Rust v0 `_R` symbol
 * llvm-symbolizer already demangles as rustc does; C++ names are left as they are).
 * ospx_short_name: pprof's way with C++ and Rust names in a table — parameter lists,
 * template arguments and a template function's return type elided (`std::vector::push_back`
 * for `std::vector<int, std::allocator<int> >::push_back(int const&)`), a Rust qualified path
 * kept with its inside shortened (`<&dyn core::ops::function::Fn as
 * core::ops::function::FnOnce>::call_once`); the full name stays in every export and in
 * --list.
 *
 * A name llvm-symbolizer leaves mangled (LLVM 14 gives up on some GCC names:
 * `_ZSt9__fill_a1IPiiEN9__gnu_cxx11__enable_ifIX...`) goes to the C++ runtime's own
 * demangler, __cxa_demangle (ospx__demangle_leftover).
 *
 * DESIGN: both work on the demangled text, not on the mangled symbol: llvm-symbolizer is the
 * one demangler of the pipeline (it knows Itanium and Rust v0), and the backends hand over
 * names only. The alternative, linking a demangler (Debian has none for Rust legacy
 * symbols as a C library; libiberty's cplus_demangle knows both, but only as a static
 * archive of binutils-dev with no stable API), would demangle twice. */
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "ospx_internal.h"

/* ---- names the symbolizer left mangled ---- */

/* The C++ runtime's demangler (GCC's, c++filt's), looked up once: libstdc++ is loaded only
 * when a name needs it, so nothing links it. */
typedef char *cxa_demangle_fn(const char *mangled, char *out, size_t *length, int *status);
static cxa_demangle_fn *cxa_demangle;
static pthread_once_t cxa_demangle_once = PTHREAD_ONCE_INIT;

static void load_cxa_demangle(void)
{
    /* A program linked whole (ospreyd, -static-pie: no program interpreter, so no AT_BASE)
     * would map a second C library for it: names stay as llvm-symbolizer gave them there. */
    if (getauxval(AT_BASE) == 0)
        return;
    void *library = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    void *symbol = library != NULL ? dlsym(library, "__cxa_demangle") : NULL;
    memcpy(&cxa_demangle, &symbol, sizeof symbol); /* ISO C: no cast of void * to a function */
}

char *ospx__demangle_leftover(const char *name)
{
    if (name == NULL || strncmp(name, "_Z", 2) != 0)
        return NULL;
    pthread_once(&cxa_demangle_once, load_cxa_demangle);
    if (cxa_demangle == NULL)
        return NULL;
    int status = -1;
    char *demangled = cxa_demangle(name, NULL, NULL, &status);
    if (status != 0) {
        free(demangled);
        return NULL;
    }
    return demangled;
}

/* ---- Rust legacy names ---- */

/* `h` and 16 lowercase hex digits: rustc's hash component. */
static bool is_rust_hash(const char *component, size_t length)
{
    if (length != 17 || component[0] != 'h')
        return false;
    for (size_t i = 1; i < length; i++)
        if (!isdigit((unsigned char)component[i]) && (component[i] < 'a' || component[i] > 'f'))
            return false;
    return true;
}

/* The character an escape ($LT$, $u7b$, ...) stands for, or 0. */
static char rust_escape(const char *escape, size_t length)
{
    static const struct {
        const char *escape;
        char character;
    } escapes[] = {{"SP", '@'},   {"BP", '*'},  {"RF", '&'},  {"LT", '<'},  {"GT", '>'},
                   {"LP", '('},   {"RP", ')'},  {"C", ','},   {"u7e", '~'}, {"u20", ' '},
                   {"u27", '\''}, {"u5b", '['}, {"u5d", ']'}, {"u7b", '{'}, {"u7d", '}'},
                   {"u3b", ';'},  {"u2b", '+'}, {"u22", '"'}, {"u21", '!'}, {"u23", '#'},
                   {"u25", '%'},  {"u2f", '/'}, {"u3d", '='}, {"u3f", '?'}, {"u5c", '\\'},
                   {"u5e", '^'},  {"u60", '`'}, {"u7c", '|'}, {"u2d", '-'}, {"u3a", ':'}};
    for (size_t i = 0; i < sizeof escapes / sizeof escapes[0]; i++)
        if (strlen(escapes[i].escape) == length && memcmp(escapes[i].escape, escape, length) == 0)
            return escapes[i].character;
    return 0;
}

/* The start of a trailing " (.llvm.DIGITS)", which llvm-symbolizer writes for a symbol that
 * LLVM's link-time optimization renamed (`_ZN...E.llvm.1935446563477025507`), else NULL. */
static char *llvm_suffix(char *name)
{
    char *at = strstr(name, " (.llvm.");
    if (at == NULL)
        return NULL;
    const char *p = at + strlen(" (.llvm.");
    while (isxdigit((unsigned char)*p))
        p++;
    return p > at + strlen(" (.llvm.") && p[0] == ')' && p[1] == '\0' ? at : NULL;
}

/* ---- OCaml names ---- */

/* An OCaml native symbol (`camlStdlib__Hashtbl__find_996`: "caml", the module path with "__"
 * between its parts, the function and its stamp; other characters as "$XX" in hex) as perf's
 * OCaml demangler writes it: `Stdlib.Hashtbl.find_996` (the stamp kept: it tells a closure from
 * its function). Only a name of "caml", an upper-case letter and symbol characters after it:
 * the runtime's C functions (`caml_c_call`) and C++ or Rust names are left as they are. */
static bool ocaml_name_as_written(char *name)
{
    if (strncmp(name, "caml", 4) != 0 || !isupper((unsigned char)name[4]))
        return false;
    for (const char *p = name + 4; *p != '\0'; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '$')
            return false;
    char *out = name;
    for (const char *in = name + 4; *in != '\0';) {
        if (in[0] == '_' && in[1] == '_' && in[2] != '\0') {
            *out++ = '.';
            in += 2;
        } else if (in[0] == '$' && isxdigit((unsigned char)in[1]) &&
                   isxdigit((unsigned char)in[2])) {
            char hex[3] = {in[1], in[2], '\0'};
            char c = (char)strtoul(hex, NULL, 16);
            *out++ = c != '\0' ? c : '?';
            in += 3;
        } else {
            *out++ = *in++;
        }
    }
    *out = '\0';
    return true;
}

void ospx__name_as_written(char *name)
{
    if (name == NULL || ocaml_name_as_written(name))
        return;
    /* rustc-demangle drops such a suffix with the hash: cut off here, put back if this is not a
     * Rust legacy name. */
    char *suffix = llvm_suffix(name);
    if (suffix != NULL)
        *suffix = '\0';
    char *last = NULL;
    for (char *p = strstr(name, "::"); p != NULL; p = strstr(p + 2, "::"))
        last = p;
    if (last == NULL || last == name || !is_rust_hash(last + 2, strlen(last + 2))) {
        if (suffix != NULL)
            *suffix = ' ';
        return;
    }
    *last = '\0';
    /* Each component: a leading "_$" is "$" (rustc adds the underscore), "$XX$" an escape,
     * ".." the path separator "::" and "." itself; an unknown escape leaves the rest as it
     * is. The result is never longer than the input. */
    char *out = name;
    bool component_start = true;
    for (const char *in = name; *in != '\0';) {
        if (component_start && in[0] == '_' && in[1] == '$')
            in++;
        component_start = false;
        if (in[0] == ':' && in[1] == ':') {
            *out++ = *in++;
            *out++ = *in++;
            component_start = true;
        } else if (in[0] == '.' && in[1] == '.') {
            *out++ = ':';
            *out++ = ':';
            in += 2;
        } else if (in[0] == '$') {
            const char *end = strchr(in + 1, '$');
            char c = end != NULL ? rust_escape(in + 1, (size_t)(end - in - 1)) : 0;
            if (c == 0) {
                memmove(out, in, strlen(in) + 1);
                return;
            }
            *out++ = c;
            in = end + 1;
        } else {
            *out++ = *in++;
        }
    }
    *out = '\0';
}

/* ---- short names for tables ---- */

/* The index just past the bracket that closes the one at s[at] ('<', '(', '{' or '['),
 * counting every kind of bracket; "->" is an arrow, not a closer. `length` when unbalanced. */
static size_t past_group(const char *s, size_t at, size_t length)
{
    int depth = 0;
    for (size_t i = at; i < length; i++) {
        char c = s[i];
        if (c == '<' || c == '(' || c == '{' || c == '[')
            depth++;
        else if ((c == '>' && !(i > 0 && s[i - 1] == '-')) || c == ')' || c == '}' || c == ']')
            depth--;
        if (depth == 0)
            return i + 1;
    }
    return length;
}

/* Whether text[0..end) ends with the keyword `operator` followed by operator characters only
 * (a `<` there is part of operator<, operator<<, operator<=, ...). */
static bool in_operator(const char *text, size_t end)
{
    size_t i = end;
    while (i > 0 && strchr("<>=-!+*/%&|^~,", text[i - 1]) != NULL)
        i--;
    return i >= 8 && memcmp(text + i - 8, "operator", 8) == 0 &&
           (i == 8 || !(isalnum((unsigned char)text[i - 9]) || text[i - 9] == '_'));
}

struct buffer {
    char *text;
    size_t size, length;
};

static void put(struct buffer *out, const char *text, size_t length)
{
    if (out->length + length + 1 > out->size)
        length = out->size > out->length + 1 ? out->size - out->length - 1 : 0;
    memcpy(out->text + out->length, text, length);
    out->length += length;
    out->text[out->length] = '\0';
}

/* s[from..to) into out: template argument lists and Rust turbofish generics (`::<T>`)
 * dropped, a qualified path (`<A as B>` where a path begins) kept with its inside
 * shortened, other brackets (`(anonymous namespace)`, `{lambda(int)#1}`, `{closure#0}`)
 * copied whole. */
static void shorten(const char *s, size_t from, size_t to, struct buffer *out, bool arguments)
{
    for (size_t i = from; i < to;) {
        char c = s[i];
        if (c == '(' || c == '{' || c == '[') {
            size_t end = past_group(s, i, to);
            put(out, s + i, end - i);
            i = end;
            continue;
        }
        if (c != '<' || arguments || in_operator(out->text, out->length)) {
            put(out, s + i, 1);
            i++;
            continue;
        }
        size_t end = past_group(s, i, to);
        char before = out->length > 0 ? out->text[out->length - 1] : '\0';
        if (before == ':' && out->length >= 2 && out->text[out->length - 2] == ':') {
            out->length -= 2; /* a turbofish: rusty::apply::<F> is rusty::apply */
            out->text[out->length] = '\0';
        } else if (before == '\0' || strchr(" &*(,", before) != NULL) {
            put(out, "<", 1); /* a qualified path: <T as Trait>, <u64> */
            shorten(s, i + 1, end > i + 1 ? end - 1 : end, out, arguments);
            put(out, ">", 1);
        } /* else template arguments: dropped */
        i = end;
    }
}

/* A name that ends with `mark`: written whole but for the directories of the path after the
 * last `before` in it, the mark after it. Returns whether the name had the mark. */
static bool marked_name(char *out, size_t size, const char *name, size_t length, const char *mark,
                        char before)
{
    size_t mark_length = strlen(mark);
    if (length <= mark_length || strcmp(name + length - mark_length, mark) != 0)
        return false;
    int body = (int)(length - mark_length);
    const char *start = memrchr(name, before, (size_t)body);
    const char *slash = start != NULL ? memrchr(start, '/', (size_t)(name + body - start)) : NULL;
    if (slash != NULL)
        snprintf(out, size, "%.*s%.*s%s", (int)(start + 1 - name), name,
                 (int)(name + body - slash - 1), slash + 1, mark);
    else
        snprintf(out, size, "%.*s%s", body, name, mark);
    return true;
}

/* The short name; with `arguments`, template and generic arguments kept. */
static void short_name(char *out, size_t size, const char *name, bool arguments)
{
    if (size == 0)
        return;
    out[0] = '\0';
    if (strncmp(name, "[k] ", 4) == 0) { /* a kernel frame, "[k] NAME" as perf shows it */
        snprintf(out, size, "%s", name);
        return;
    }
    if (name == NULL)
        return;
    size_t length = strlen(name);
    /* A JIT's own name (symbolize.c marks it " [jit]"): not C++, kept whole but for the
     * directories of a source path that ends it (node's "JS:*sortArr /srv/app.js:2:17" is
     * "JS:*sortArr app.js:2:17"), the mark after it. A Python frame's (" [py]"):
     * "qualname (PATH:LINE)", the same but for the path after the parenthesis. */
    if (marked_name(out, size, name, length, OSPX_JIT_MARK, ' ') ||
        marked_name(out, size, name, length, OSPX_PY_MARK, '('))
        return;
    /* A GCC clone suffix (" [clone .cold]", llvm's " (.isra.0)") is kept as it is, after
     * the rest: a function's cold part is a row of its own. */
    const char *clone = strstr(name, " [clone ");
    if (clone == NULL && length > 0 && name[length - 1] == ')')
        clone = strstr(name, " (.");
    size_t end = clone != NULL ? (size_t)(clone - name) : length;
    /* The parameter list that ends the name, with its cv and ref qualifiers. */
    size_t stripped = end;
    for (;;) {
        static const char *const qualifiers[] = {" const", " volatile", " &&", " &"};
        bool again = false;
        for (size_t q = 0; q < 4; q++) {
            size_t n = strlen(qualifiers[q]);
            if (stripped >= n && memcmp(name + stripped - n, qualifiers[q], n) == 0) {
                stripped -= n;
                again = true;
            }
        }
        if (!again)
            break;
    }
    if (stripped > 0 && name[stripped - 1] == ')') {
        int depth = 0;
        size_t open = stripped;
        while (open-- > 0) {
            depth += name[open] == ')' ? 1 : name[open] == '(' ? -1 : 0;
            if (depth == 0)
                break;
        }
        /* "operator()" with no parameter list is the call operator itself */
        bool call_operator =
            stripped - open == 2 && open >= 8 && memcmp(name + open - 8, "operator", 8) == 0;
        if (depth == 0 && open > 0 && !call_operator)
            end = open;
    }
    char text[4096];
    struct buffer buffer = {text, sizeof text, 0};
    text[0] = '\0';
    shorten(name, 0, end, &buffer, arguments);
    /* A template function's return type ("void std::__introsort_loop"): what comes before
     * the last space outside brackets, unless that space follows `operator` (operator new,
     * a conversion operator). */
    const char *start = text;
    int depth = 0;
    for (size_t i = 0; i < buffer.length; i++) {
        char c = text[i];
        bool arrow = c == '>' && i > 0 && text[i - 1] == '-';
        depth += (c == '<' || c == '(' || c == '{' || c == '[')               ? 1
                 : ((c == '>' && !arrow) || c == ')' || c == '}' || c == ']') ? -1
                                                                              : 0;
        if (depth == 0 && c == ' ') {
            if (in_operator(text, i))
                break;
            start = text + i + 1;
        }
    }
    if (start[0] == '\0')
        start = text;
    if (start[0] == '\0') {
        snprintf(out, size, "%s", name);
        return;
    }
    snprintf(out, size, "%s%s", start, clone != NULL ? clone : "");
}

void ospx_short_name(char *out, size_t size, const char *name)
{
    short_name(out, size, name, false);
}

void ospx__short_name_with_arguments(char *out, size_t size, const char *name)
{
    short_name(out, size, name, true);
}
