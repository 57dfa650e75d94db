#!/usr/bin/env python3
"""undefine-ra.py IN OUT — a copy of the ELF object IN whose .eh_frame says, in every CIE's
initial instructions, that the return address is undefined (DW_CFA_undefined): every frame
of the object is the outermost, so a stack unwound by these rows ends at the first frame in
it. Nothing else changes: the build id, .eh_frame_hdr and the code are the same, and the
program runs as before (its C library unwinds nothing). For tests/e2e-cache.sh."""
import struct
import sys


def uleb(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def section(data, name):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    names_at = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    for i in range(shnum):
        header = shoff + i * shentsize
        name_at, = struct.unpack_from("<I", data, header)
        offset, size = struct.unpack_from("<QQ", data, header + 0x18)
        end = data.index(b"\0", names_at + name_at)
        if data[names_at + name_at:end].decode() == name:
            return offset, size
    sys.exit(f"{sys.argv[1]}: no {name} section")


def main():
    data = bytearray(open(sys.argv[1], "rb").read())
    start, size = section(data, ".eh_frame")
    at, changed, return_register = start, 0, 16  # x86_64's return-address column
    while at + 8 <= start + size:
        length, cie_id = struct.unpack_from("<II", data, at)
        if length == 0 or length == 0xFFFFFFFF:
            break
        end = at + 4 + length
        if cie_id == 0:  # a CIE
            p = at + 8
            version = data[p]
            p += 1
            aug_end = data.index(b"\0", p)
            augmentation = bytes(data[p:aug_end])
            p = aug_end + 1
            _, p = uleb(data, p)  # code alignment
            _, p = uleb(data, p)  # data alignment (sleb: only its length matters)
            if version == 1:
                return_register = data[p]
                p += 1
            else:
                return_register, p = uleb(data, p)
            if augmentation.startswith(b"z"):
                length_of, p = uleb(data, p)
                p += length_of
            if end - p >= 2 and return_register < 0x80:
                data[p:end] = bytes([0x07, return_register]) + bytes(end - p - 2)
                changed += 1
        at = end
    if changed == 0:
        sys.exit(f"{sys.argv[1]}: no CIE changed")
    open(sys.argv[2], "wb").write(data)
    print(f"{changed} CIEs changed")


main()
