/* test-python.c — the shim's Python frame walk (shim/python.c) over frame chains built here:
 * the frames put above the eval frame they ran in, in call order; and hostile chains (freed
 * pages, cycles, misaligned and random words, a thread state of another thread) that end the
 * Python part of the walk without a fault, the native frames kept in order. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_core.h"
#include "osp_python.h"
#include "suite.h"

#define EVAL_LO 0x1000u
#define EVAL_HI 0x2000u

/* The interpreter's structures, as 3.11 lays them out, in memory of our own. */
struct fake {
    _Alignas(16) uint8_t runtime[64];
    _Alignas(16) uint8_t interp[64];
    _Alignas(16) uint8_t tstate[OSP_PY_TSTATE_READ + 16];
    _Alignas(16) uint8_t cframe[32];
    _Alignas(16) uint8_t frames[4][OSP_PY_FRAME_READ + 8];
    _Alignas(16) uint8_t code[4][256];
};

static void put(uint8_t *at, uint64_t v)
{
    memcpy(at, &v, sizeof v);
}

/* Three frames: 0 (running, not an entry) called by 1 (an entry), called by 2 (an entry). */
static void build(struct fake *f)
{
    memset(f, 0, sizeof *f);
    put(f->runtime + OSP_PY_RUNTIME_INTERPRETERS_HEAD, (uint64_t)(uintptr_t)f->interp);
    put(f->interp + OSP_PY_INTERP_THREADS_HEAD, (uint64_t)(uintptr_t)f->tstate);
    put(f->tstate + OSP_PY_TSTATE_THREAD_ID, (uint64_t)pthread_self());
    put(f->tstate + OSP_PY_TSTATE_CFRAME, (uint64_t)(uintptr_t)f->cframe);
    put(f->cframe + OSP_PY_CFRAME_CURRENT_FRAME, (uint64_t)(uintptr_t)f->frames[0]);
    for (int k = 0; k < 3; k++) {
        uint8_t *fr = f->frames[k];
        put(fr + OSP_PY_FRAME_F_CODE, (uint64_t)(uintptr_t)f->code[k]);
        put(fr + OSP_PY_FRAME_PREVIOUS, k < 2 ? (uint64_t)(uintptr_t)f->frames[k + 1] : 0);
        put(fr + OSP_PY_FRAME_PREV_INSTR,
            (uint64_t)(uintptr_t)f->code[k] + OSP_PY_CODE_CODE_ADAPTIVE + 2u * (10u + k));
        fr[OSP_PY_FRAME_IS_ENTRY] = k > 0;
        fr[OSP_PY_FRAME_OWNER] = 0;
    }
    osp__read_code_init();
    osp__python_use((uint64_t)(uintptr_t)f->runtime, EVAL_LO, EVAL_HI);
}

static uint64_t pc_of(struct fake *f, int k)
{
    return osp_py_pc((uint64_t)(uintptr_t)f->code[k], 10u + (unsigned)k);
}

START_TEST(frames_sit_above_the_eval_frame_they_ran_in)
{
    static struct fake f;
    build(&f);
    uint64_t pcs[OSP_MAX_DEPTH] = {0x500, 0x1801, 0x900, 0x1901, 0x950};
    uint32_t depth = osp__python_frames(pcs, 5, OSP_MAX_DEPTH);
    uint64_t want[] = {0x500, pc_of(&f, 0), pc_of(&f, 1), 0x1801,
                       0x900, pc_of(&f, 2), 0x1901,       0x950};
    ck_assert_uint_eq(depth, 8);
    for (uint32_t i = 0; i < depth; i++)
        ck_assert_uint_eq(pcs[i], want[i]);
    ck_assert_uint_eq(osp_py_pc_code(pcs[1] - 1), (uint64_t)(uintptr_t)f.code[0]);
    ck_assert_uint_eq(osp_py_pc_index(pcs[2] - 1), 11);
    /* No eval frame: nothing read, nothing added. */
    uint64_t plain[OSP_MAX_DEPTH] = {0x500, 0x900};
    ck_assert_uint_eq(osp__python_frames(plain, 2, OSP_MAX_DEPTH), 2);
    /* At the cap: the deepest native frames give way, the depth stays the cap. */
    uint64_t full[4] = {0x500, 0x1801, 0x900, 0x950};
    ck_assert_uint_eq(osp__python_frames(full, 4, 4), 4);
    ck_assert_uint_eq(full[1], pc_of(&f, 0));
    ck_assert_uint_eq(full[2], pc_of(&f, 1));
    ck_assert_uint_eq(full[3], 0x1801);
    osp__python_use(0, 0, 0);
}
END_TEST

/* The native frames of `pcs` (not Python's), in order, are `native`. */
static void native_kept(const uint64_t *pcs, uint32_t depth, const uint64_t *native, uint32_t n)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < depth; i++)
        if (!osp_py_pc_is(pcs[i])) {
            ck_assert_uint_lt(j, n);
            ck_assert_uint_eq(pcs[i], native[j++]);
        }
}

/* The frames in a stack chunk of the thread (read directly), the chunk's pages checked: a
 * chunk with a page gone is read frame by frame, without a fault. */
START_TEST(frames_in_the_thread_chunk_are_read_in_place)
{
    static struct fake f;
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *chunk =
        mmap(NULL, 4 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(chunk, MAP_FAILED);
    for (int round = 0; round < 2; round++) {
        build(&f);
        memset(chunk, 0, 2 * (size_t)page);
        put(chunk + OSP_PY_CHUNK_SIZE, 4 * (uint64_t)page);
        put(f.tstate + OSP_PY_TSTATE_DATASTACK_CHUNK, (uint64_t)(uintptr_t)chunk);
        /* The three frames moved into the chunk (frame 1 at the end of its first page). */
        uint8_t *at[3] = {chunk + 64, chunk + page - 80, chunk + page + 128};
        for (int k = 0; k < 3; k++)
            memcpy(at[k], f.frames[k], OSP_PY_FRAME_READ);
        put(at[0] + OSP_PY_FRAME_PREVIOUS, (uint64_t)(uintptr_t)at[1]);
        put(at[1] + OSP_PY_FRAME_PREVIOUS, (uint64_t)(uintptr_t)at[2]);
        put(f.cframe + OSP_PY_CFRAME_CURRENT_FRAME, (uint64_t)(uintptr_t)at[0]);
        if (round == 1) /* its last page gone: the chunk is not trusted */
            munmap(chunk + 3 * page, (size_t)page);
        uint64_t pcs[OSP_MAX_DEPTH] = {0x500, 0x1801, 0x900, 0x1901, 0x950};
        ck_assert_uint_eq(osp__python_frames(pcs, 5, OSP_MAX_DEPTH), 8);
        ck_assert_uint_eq(pcs[1], pc_of(&f, 0));
        ck_assert_uint_eq(pcs[2], pc_of(&f, 1));
        ck_assert_uint_eq(pcs[5], pc_of(&f, 2));
    }
    munmap(chunk, 3 * (size_t)page);
    osp__python_use(0, 0, 0);
}
END_TEST

START_TEST(hostile_chains_end_the_python_walk)
{
    static struct fake f;
    const uint64_t native[] = {0x500, 0x1801, 0x900, 0x1901, 0x950};
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *gone =
        mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(gone, MAP_FAILED);
    munmap(gone, (size_t)page);
    uint64_t pcs[OSP_MAX_DEPTH];
    uint32_t depth;

    /* A frame freed under the walk: the frames before it kept, the rest not read. */
    build(&f);
    put(f.frames[0] + OSP_PY_FRAME_PREVIOUS, (uint64_t)(uintptr_t)gone);
    memcpy(pcs, native, sizeof native);
    depth = osp__python_frames(pcs, 5, OSP_MAX_DEPTH);
    ck_assert_uint_eq(depth, 6);
    native_kept(pcs, depth, native, 5);

    /* A cycle: at most OSP_PY_MAX_FRAMES frames. */
    build(&f);
    put(f.frames[0] + OSP_PY_FRAME_PREVIOUS, (uint64_t)(uintptr_t)f.frames[0]);
    memcpy(pcs, native, sizeof native);
    depth = osp__python_frames(pcs, 5, OSP_MAX_DEPTH);
    ck_assert_uint_le(depth, 5 + OSP_PY_MAX_FRAMES);
    native_kept(pcs, depth, native, 5);

    /* A misaligned code object, an owner 3.11 has not: nothing of that frame. */
    build(&f);
    put(f.frames[0] + OSP_PY_FRAME_F_CODE, (uint64_t)(uintptr_t)f.code[0] + 3);
    memcpy(pcs, native, sizeof native);
    ck_assert_uint_eq(osp__python_frames(pcs, 5, OSP_MAX_DEPTH), 5);
    build(&f);
    f.frames[0][OSP_PY_FRAME_OWNER] = 9;
    memcpy(pcs, native, sizeof native);
    ck_assert_uint_eq(osp__python_frames(pcs, 5, OSP_MAX_DEPTH), 5);

    /* The thread state of another thread only, an interpreter freed, a cframe freed. */
    build(&f);
    put(f.tstate + OSP_PY_TSTATE_THREAD_ID, (uint64_t)pthread_self() + 1);
    memcpy(pcs, native, sizeof native);
    ck_assert_uint_eq(osp__python_frames(pcs, 5, OSP_MAX_DEPTH), 5);
    build(&f);
    put(f.runtime + OSP_PY_RUNTIME_INTERPRETERS_HEAD, (uint64_t)(uintptr_t)gone);
    memcpy(pcs, native, sizeof native);
    ck_assert_uint_eq(osp__python_frames(pcs, 5, OSP_MAX_DEPTH), 5);
    build(&f);
    put(f.tstate + OSP_PY_TSTATE_CFRAME, (uint64_t)(uintptr_t)gone);
    memcpy(pcs, native, sizeof native);
    ck_assert_uint_eq(osp__python_frames(pcs, 5, OSP_MAX_DEPTH), 5);

    /* Random words everywhere, pointers among ours, freed, misaligned, wild. */
    srand(34);
    for (int round = 0; round < 5000; round++) {
        build(&f);
        uint64_t choices[] = {0,
                              (uint64_t)(uintptr_t)gone,
                              (uint64_t)(uintptr_t)f.frames[rand() % 4],
                              (uint64_t)(uintptr_t)f.code[rand() % 4] + (uint64_t)(rand() % 9),
                              (uint64_t)(uintptr_t)f.tstate,
                              ((uint64_t)rand() << 33) ^ (uint64_t)rand(),
                              UINT64_MAX - 7};
        uint8_t *areas[] = {f.tstate, f.cframe, f.frames[0], f.frames[1], f.frames[2], f.frames[3]};
        if (rand() % 4 == 0) /* a thread state naming a chunk: one of ours, or wild */
            put(f.tstate + OSP_PY_TSTATE_DATASTACK_CHUNK, choices[rand() % 7]);
        for (int n = rand() % 12; n > 0; n--) {
            uint8_t *area = areas[rand() % 6];
            size_t size = area == f.tstate   ? sizeof f.tstate
                          : area == f.cframe ? sizeof f.cframe
                                             : OSP_PY_FRAME_READ;
            size_t at = (size_t)(rand() % (int)(size / 8)) * 8;
            if (rand() % 3 == 0)
                area[at + (size_t)(rand() % 8)] = (uint8_t)rand();
            else
                put(area + at, choices[rand() % 7]);
        }
        memcpy(pcs, native, sizeof native);
        uint32_t cap = 5 + (uint32_t)(rand() % 8);
        depth = osp__python_frames(pcs, 5, cap);
        ck_assert_uint_le(depth, cap);
        native_kept(pcs, depth, native, 5);
    }
    osp__python_use(0, 0, 0);
}
END_TEST

Suite *python_suite(void)
{
    Suite *s = suite_create("python");
    SUITE_CASE(s, "walk", 0, frames_sit_above_the_eval_frame_they_ran_in,
               frames_in_the_thread_chunk_are_read_in_place, hostile_chains_end_the_python_walk);
    return s;
}
