/* python.c — the Python functions a sampled thread is running, among its native frames.
 *
 * Owns finding CPython 3.11 in the process (at start: the symbols _PyRuntime, Py_Version and
 * _PyEval_EvalFrameDefault through the dynamic linker, never in the handler), refusing another
 * version with one line, and, in the SIGPROF handler, reading the thread's Python frame chain
 * (proto/osp_python.h: the layout and the pseudo-pcs) and putting each frame into the native
 * stack just above the _PyEval_EvalFrameDefault frame it ran in, so a stack reads in call
 * order: a Python function calling a C function calling back into Python shows as such.
 *
 * DESIGN. Every word of the interpreter's is read with process_vm_readv on our own pid
 * (osp__read_code): a freed, corrupt or concurrently changed frame gives EFAULT or a value
 * that fails a check (alignment, owner), which ends the Python part of the walk; nothing here
 * can fault. At most OSP_PY_MAX_FRAMES frames per sample, so a cycle costs a bounded walk.
 * The thread's PyThreadState is found once by its thread_id (the interpreter's list) and
 * kept per thread, checked at each sample by one read. A thread blocked in time.sleep keeps
 * its current frame in its thread state: its wait shows its Python site too. Names, files
 * and lines are ospreyd's work (daemon/python.c), from the code object's address.
 *
 * Async-signal-safe: osp__python_frames (system calls, memmove, reads of our own TLS).
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "osp_base.h"
#include "osp_core.h"
#include "osp_python.h"

static uint64_t py_runtime;             /* &_PyRuntime, 0: no Python 3.11 to read */
static uint64_t py_eval_lo, py_eval_hi; /* _PyEval_EvalFrameDefault's code */
static __thread uint64_t py_tstate __attribute__((tls_model("initial-exec")));
/* The thread's stack chunk last seen readable whole: [lo, hi). */
static __thread uint64_t py_chunk_lo __attribute__((tls_model("initial-exec")));
static __thread uint64_t py_chunk_hi __attribute__((tls_model("initial-exec")));
/* The thread state's words as last read: kept off the stack (the handler may run on a small
 * signal stack of the program's); SIGPROF is blocked wherever it is used. */
static __thread uint64_t py_words[OSP_PY_TSTATE_READ / 8]
    __attribute__((tls_model("initial-exec")));

void osp__python_detect(void)
{
    void *runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (runtime == NULL)
        return; /* not Python, or an embedder that loads it later: not read */
    const char *off = secure_getenv("OSPREY_PYTHON");
    if (off != NULL && strcmp(off, "0") == 0)
        return;
    const unsigned long *version = dlsym(RTLD_DEFAULT, "Py_Version");
    if (version == NULL || (*version >> 16) != OSP_PY_VERSION_MAJOR_MINOR) {
        if (version == NULL)
            osp__warn("Python older than 3.11 found: its functions are not shown, only native "
                      "frames");
        else
            osp__warn("Python %lu.%lu found: its functions are not shown (3.11 is read), only "
                      "native frames",
                      *version >> 24, (*version >> 16) & 0xff);
        return;
    }
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (eval == NULL || dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) == 0 || sym == NULL ||
        sym->st_size == 0) {
        osp__warn("Python 3.11 found without _PyEval_EvalFrameDefault's size: its functions are "
                  "not shown");
        return;
    }
    osp__python_use((uint64_t)(uintptr_t)runtime, (uint64_t)(uintptr_t)eval,
                    (uint64_t)(uintptr_t)eval + sym->st_size);
}

void osp__python_use(uint64_t runtime, uint64_t eval_lo, uint64_t eval_hi)
{
    py_eval_lo = eval_lo;
    py_eval_hi = eval_hi;
    py_runtime = runtime;
    py_tstate = py_chunk_lo = py_chunk_hi = 0; /* the calling thread's: looked for anew */
}

int osp__python_on(void)
{
    return py_runtime != 0;
}

/* Read the 8-byte word at addr (8-byte aligned) without faulting. Async-signal-safe. */
static int read_word(uint64_t addr, uint64_t *out)
{
    if (addr == 0 || (addr & 7) != 0)
        return -1;
    return osp__read_code(addr, out, sizeof *out);
}

/* The calling thread's PyThreadState, its first OSP_PY_TSTATE_READ bytes in words; 0 when it
 * has none (yet). Async-signal-safe. */
static uint64_t thread_state(uint64_t *words)
{
    uint64_t self = (uint64_t)pthread_self();
    if (py_tstate != 0 && osp__read_code(py_tstate, words, OSP_PY_TSTATE_READ) == 0 &&
        words[OSP_PY_TSTATE_THREAD_ID / 8] == self)
        return py_tstate;
    py_tstate = 0;
    py_chunk_lo = py_chunk_hi = 0; /* a thread state found anew: its stack checked anew */
    uint64_t interp, t;
    if (read_word(py_runtime + OSP_PY_RUNTIME_INTERPRETERS_HEAD, &interp) != 0 ||
        read_word(interp + OSP_PY_INTERP_THREADS_HEAD, &t) != 0)
        return 0;
    for (uint32_t n = 0; t != 0 && n < OSP_PY_MAX_THREADS; n++) {
        if ((t & 7) != 0 || osp__read_code(t, words, OSP_PY_TSTATE_READ) != 0)
            return 0;
        if (words[OSP_PY_TSTATE_THREAD_ID / 8] == self)
            return py_tstate = t;
        t = words[OSP_PY_TSTATE_NEXT / 8];
    }
    return 0;
}

/* Whether every page of [lo, hi) is mapped and readable: one byte of each read with
 * process_vm_readv, 4 pages a call. Async-signal-safe. */
static int pages_readable(uint64_t lo, uint64_t hi)
{
    char byte;
    struct iovec local[4], remote[4];
    for (uint64_t page = lo & ~UINT64_C(4095); page < hi;) {
        int n = 0;
        for (; n < 4 && page < hi; n++, page += 4096) {
            local[n] = (struct iovec){&byte, 1};
            remote[n] = (struct iovec){(void *)(uintptr_t)(page < lo ? lo : page), 1};
        }
        if (osp__read_iov(local, remote, (unsigned long)n) != n)
            return 0;
    }
    return 1;
}

/* The thread's current stack chunk, where its frames are, in [*lo, *hi): read directly once
 * every page of it was seen readable (kept per thread, checked when the chunk changes). The
 * thread is interrupted: its chunk is not freed under the handler, and one being freed is
 * unlinked from the thread state first. 0 and 0 when there is none to trust. */
static void stack_chunk(const uint64_t *tstate_words, uint64_t *lo, uint64_t *hi)
{
    uint64_t chunk = tstate_words[OSP_PY_TSTATE_DATASTACK_CHUNK / 8], size;
    *lo = *hi = 0;
    if (read_word(chunk + OSP_PY_CHUNK_SIZE, &size) != 0 || size <= OSP_PY_CHUNK_DATA ||
        size > OSP_PY_CHUNK_MAX)
        return;
    if (chunk != py_chunk_lo || chunk + size != py_chunk_hi) {
        py_chunk_lo = py_chunk_hi = 0;
        if (!pages_readable(chunk, chunk + size))
            return;
        py_chunk_lo = chunk;
        py_chunk_hi = chunk + size;
    }
    *lo = chunk + OSP_PY_CHUNK_DATA;
    *hi = chunk + size;
}

/* Whether the i-th pc of a stack (leaf first: the first exact, the others return addresses)
 * lies in _PyEval_EvalFrameDefault. */
static int in_eval(const uint64_t *pcs, uint32_t i)
{
    uint64_t pc = i == 0 ? pcs[0] : pcs[i] - 1;
    return pc >= py_eval_lo && pc < py_eval_hi;
}

/* One frame's fields. Returns 0, or -1 when it cannot be read or fails a check. */
struct py_frame {
    uint64_t code, previous, index;
    int entry;
};
static int read_frame(uint64_t frame, uint64_t lo, uint64_t hi, struct py_frame *f)
{
    uint64_t w[OSP_PY_FRAME_READ / 8];
    if (frame == 0 || (frame & 7) != 0)
        return -1;
    if (frame >= lo && frame < hi && hi - frame >= sizeof w)
        memcpy(w, (const void *)(uintptr_t)frame, sizeof w); /* in the thread's own chunk */
    else if (osp__read_code(frame, w, sizeof w) != 0)
        return -1;
    unsigned char entry = (unsigned char)(w[OSP_PY_FRAME_IS_ENTRY / 8] >> 32);
    unsigned char owner = (unsigned char)(w[OSP_PY_FRAME_OWNER / 8] >> 40);
    f->code = w[OSP_PY_FRAME_F_CODE / 8];
    f->previous = w[OSP_PY_FRAME_PREVIOUS / 8];
    uint64_t instr = w[OSP_PY_FRAME_PREV_INSTR / 8], first = f->code + OSP_PY_CODE_CODE_ADAPTIVE;
    if (f->code == 0 || (f->code & 7) != 0 || f->code > OSP_PY_PC_ADDR_MASK || entry > 1 ||
        owner > 3 || (f->previous & 7) != 0)
        return -1;
    f->index = instr >= first ? (instr - first) / 2 : 0;
    f->entry = entry;
    return 0;
}

uint32_t osp__python_frames(uint64_t *pcs, uint32_t depth, uint32_t cap)
{
    if (py_runtime == 0)
        return depth;
    uint32_t i = 0;
    while (i < depth && !in_eval(pcs, i))
        i++;
    if (i == depth)
        return depth; /* no Python running on this stack */
    uint64_t frame, lo, hi;
    if (thread_state(py_words) == 0 ||
        read_word(py_words[OSP_PY_TSTATE_CFRAME / 8] + OSP_PY_CFRAME_CURRENT_FRAME, &frame) != 0)
        return depth;
    stack_chunk(py_words, &lo, &hi);
    uint32_t total = 0;
    for (; i < depth && frame != 0 && total < OSP_PY_MAX_FRAMES; i++) {
        if (!in_eval(pcs, i))
            continue;
        /* The frames from `frame` to the next entry frame ran in this eval call: each goes
         * in before it (leaf first), the native frames below moved down, the deepest lost
         * at the cap. */
        struct py_frame f;
        int entry = 0;
        while (!entry && frame != 0 && total < OSP_PY_MAX_FRAMES && i < cap) {
            if (read_frame(frame, lo, hi, &f) != 0)
                return depth; /* a frame that fails a check ends the Python walk */
            uint32_t keep = depth < cap ? depth - i : depth - i - 1;
            memmove(&pcs[i + 1], &pcs[i], keep * sizeof *pcs);
            depth = i + 1 + keep;
            pcs[i++] = osp_py_pc(f.code, f.index);
            total++;
            entry = f.entry;
            frame = f.previous;
        }
    }
    return depth;
}
