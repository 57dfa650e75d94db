/* test-python-layout.c — proto/osp_python.h's offsets against CPython 3.11's own headers
 * (python3.11-dev): built only where they are installed (tests/meson.build). Prints each
 * field that differs and fails. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#include <stddef.h>
#include <stdio.h>

#include "osp_python.h"

static int failures;

static void same(const char *what, size_t theirs, size_t ours)
{
    if (theirs != ours) {
        printf("%s: CPython's %zu, osp_python.h's %zu\n", what, theirs, ours);
        failures++;
    }
}
#define SAME(type, field, ours) same(#type "." #field, offsetof(type, field), ours)

int main(void)
{
    same("PY_VERSION_HEX >> 16", PY_VERSION_HEX >> 16, OSP_PY_VERSION_MAJOR_MINOR);
    SAME(_PyRuntimeState, interpreters.head, OSP_PY_RUNTIME_INTERPRETERS_HEAD);
    SAME(PyInterpreterState, threads.head, OSP_PY_INTERP_THREADS_HEAD);
    SAME(PyThreadState, next, OSP_PY_TSTATE_NEXT);
    SAME(PyThreadState, cframe, OSP_PY_TSTATE_CFRAME);
    SAME(PyThreadState, thread_id, OSP_PY_TSTATE_THREAD_ID);
    SAME(PyThreadState, datastack_chunk, OSP_PY_TSTATE_DATASTACK_CHUNK);
    same("thread state bytes read",
         offsetof(PyThreadState, datastack_chunk) + 8 <= OSP_PY_TSTATE_READ, 1);
    SAME(_PyStackChunk, size, OSP_PY_CHUNK_SIZE);
    SAME(_PyStackChunk, data, OSP_PY_CHUNK_DATA);
    SAME(_PyCFrame, current_frame, OSP_PY_CFRAME_CURRENT_FRAME);
    SAME(_PyInterpreterFrame, f_code, OSP_PY_FRAME_F_CODE);
    SAME(_PyInterpreterFrame, previous, OSP_PY_FRAME_PREVIOUS);
    SAME(_PyInterpreterFrame, prev_instr, OSP_PY_FRAME_PREV_INSTR);
    SAME(_PyInterpreterFrame, is_entry, OSP_PY_FRAME_IS_ENTRY);
    SAME(_PyInterpreterFrame, owner, OSP_PY_FRAME_OWNER);
    SAME(PyCodeObject, co_firstlineno, OSP_PY_CODE_FIRSTLINENO);
    SAME(PyCodeObject, co_filename, OSP_PY_CODE_FILENAME);
    SAME(PyCodeObject, co_name, OSP_PY_CODE_NAME);
    SAME(PyCodeObject, co_qualname, OSP_PY_CODE_QUALNAME);
    SAME(PyCodeObject, co_linetable, OSP_PY_CODE_LINETABLE);
    SAME(PyCodeObject, co_code_adaptive, OSP_PY_CODE_CODE_ADAPTIVE);
    SAME(PyASCIIObject, length, OSP_PY_STR_LENGTH);
    SAME(PyASCIIObject, state, OSP_PY_STR_STATE);
    same("sizeof(PyASCIIObject)", sizeof(PyASCIIObject), OSP_PY_STR_ASCII_DATA);
    SAME(PyCompactUnicodeObject, utf8_length, OSP_PY_STR_UTF8_LENGTH);
    SAME(PyCompactUnicodeObject, utf8, OSP_PY_STR_UTF8);
    SAME(PyVarObject, ob_size, OSP_PY_BYTES_SIZE);
    SAME(PyBytesObject, ob_sval, OSP_PY_BYTES_DATA);
    same("frame bytes read", offsetof(_PyInterpreterFrame, owner) + 1 <= OSP_PY_FRAME_READ, 1);
    same("FRAME_OWNED_BY_FRAME_OBJECT", FRAME_OWNED_BY_FRAME_OBJECT, 2);
    return failures == 0 ? 0 : 1;
}
