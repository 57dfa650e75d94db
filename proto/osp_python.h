/* osp_python.h — CPython 3.11's memory layout as the shim's SIGPROF handler and ospreyd read it,
 * and how a Python frame is carried in a stack: the one place both sides take it from.
 *
 * A sampled thread's Python frames are read by the handler (shim/python.c) from the
 * interpreter's own structures: _PyRuntime.interpreters.head -> PyInterpreterState.threads.head
 * -> the PyThreadState whose thread_id is the thread's pthread_t -> cframe -> current_frame ->
 * previous ... Each _PyInterpreterFrame gives its code object (f_code) and the code unit it last
 * ran (prev_instr); is_entry marks the first frame a call of _PyEval_EvalFrameDefault pushed, so
 * the frames from the current one to the next entry frame (included) ran in the innermost
 * native _PyEval_EvalFrameDefault frame, the next group in the next one, and so on.
 *
 * A Python frame sits in a stack (proto/osp_ring.h, proto/raw-format.md) as a pseudo-pc:
 * bit 62 set (above every user address, below the kernel's negative ones), the instruction
 * index in code units (clamped) in bits 48..61, the code object's address in bits 0..47.
 * ospreyd resolves the code object (name, file, line) from the process's memory and writes
 * the names in the raw file's "python" object (proto/raw-format.md).
 *
 * Offsets are those of Debian 12's python3.11 (x86_64 and aarch64 LP64), taken from
 * CPython 3.11's internal headers (tests/test-python-layout.c checks them where
 * python3.11-dev is installed). Another version is refused with one line.
 */
#ifndef OSP_PYTHON_H
#define OSP_PYTHON_H

#include <stdint.h>

#define OSP_PY_VERSION_MAJOR_MINOR 0x030bu /* PY_VERSION_HEX >> 16 of the layout below */

/* _PyRuntimeState */
#define OSP_PY_RUNTIME_INTERPRETERS_HEAD 40u
/* PyInterpreterState */
#define OSP_PY_INTERP_THREADS_HEAD 16u
/* PyThreadState */
#define OSP_PY_TSTATE_NEXT            8u
#define OSP_PY_TSTATE_CFRAME          56u
#define OSP_PY_TSTATE_THREAD_ID       152u
#define OSP_PY_TSTATE_DATASTACK_CHUNK 296u
#define OSP_PY_TSTATE_READ            304u /* bytes read of a thread state: the fields above */
/* _PyStackChunk: where a thread's frames live (the frames of a generator live in it) */
#define OSP_PY_CHUNK_SIZE 8u
#define OSP_PY_CHUNK_DATA 24u
#define OSP_PY_CHUNK_MAX  (UINT64_C(4) << 20) /* a larger chunk is not read directly */
/* _PyCFrame */
#define OSP_PY_CFRAME_CURRENT_FRAME 8u
/* _PyInterpreterFrame */
#define OSP_PY_FRAME_F_CODE     32u
#define OSP_PY_FRAME_PREVIOUS   48u
#define OSP_PY_FRAME_PREV_INSTR 56u
#define OSP_PY_FRAME_IS_ENTRY   68u
#define OSP_PY_FRAME_OWNER      69u
#define OSP_PY_FRAME_READ       72u /* bytes read of a frame: the fields above */
/* PyCodeObject */
#define OSP_PY_CODE_FIRSTLINENO   72u
#define OSP_PY_CODE_FILENAME      112u
#define OSP_PY_CODE_NAME          120u
#define OSP_PY_CODE_QUALNAME      128u
#define OSP_PY_CODE_LINETABLE     136u
#define OSP_PY_CODE_CODE_ADAPTIVE 184u
/* PyASCIIObject / PyCompactUnicodeObject (str), PyBytesObject */
#define OSP_PY_STR_LENGTH      16u
#define OSP_PY_STR_STATE       32u
#define OSP_PY_STR_ASCII_DATA  48u /* sizeof(PyASCIIObject) */
#define OSP_PY_STR_UTF8_LENGTH 48u
#define OSP_PY_STR_UTF8        56u
#define OSP_PY_BYTES_SIZE      16u
#define OSP_PY_BYTES_DATA      32u

/* Frames at most per sample, and the thread-state list walked at most this far. */
#define OSP_PY_MAX_FRAMES  96u
#define OSP_PY_MAX_THREADS 4096u

/* A Python frame as a stack's pseudo-pc. */
#define OSP_PY_PC_MARK      (UINT64_C(1) << 62)
#define OSP_PY_PC_ADDR_MASK ((UINT64_C(1) << 48) - 1)
#define OSP_PY_PC_INDEX_MAX ((UINT64_C(1) << 14) - 1)

static inline uint64_t osp_py_pc(uint64_t code, uint64_t index)
{
    if (index > OSP_PY_PC_INDEX_MAX)
        index = OSP_PY_PC_INDEX_MAX;
    return OSP_PY_PC_MARK | (index << 48) | (code & OSP_PY_PC_ADDR_MASK);
}

/* Whether pc (or a reader's pc - 1, a return address one byte back) is a Python frame. */
static inline int osp_py_pc_is(uint64_t pc)
{
    return (pc >> 62) == 1;
}

/* A reader's pc - 1 (a return address one byte back) put back: the code object is 8-byte
 * aligned, so its low three bits are 0 and pc - 1 borrowed from them alone. */
static inline uint64_t osp_py_pc_norm(uint64_t pc)
{
    return (pc & 7) == 7 ? pc + 1 : pc;
}
/* The code object's address and the instruction index of a pseudo-pc. */
static inline uint64_t osp_py_pc_code(uint64_t pc)
{
    return osp_py_pc_norm(pc) & OSP_PY_PC_ADDR_MASK;
}
static inline uint64_t osp_py_pc_index(uint64_t pc)
{
    return (osp_py_pc_norm(pc) >> 48) & OSP_PY_PC_INDEX_MAX;
}

#endif
