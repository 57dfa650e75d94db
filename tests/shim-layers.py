#!/usr/bin/env python3
"""shim-layers.py SHIM_DIR ARCHIVE — the shim's layers point one way.

Reads the layer table of SHIM_DIR/README.md ("Layers": one row per layer, its number first,
then its header and files in backquotes, in their order within the layer) and checks:
  - every .c and .h file in SHIM_DIR is in the table (stub.c, the non-Linux build, excepted);
  - no file includes the header of a layer above its own;
  - in ARCHIVE (libospreyprof.a), no member uses a symbol defined by a member of a layer above
    its own, or by a later file of its own layer — calls go downwards only, so the interposers
    (the top layer) are called by nobody in the shim. This also catches a call by a libc name
    (`nanosleep`, `kill`) that would land in the shim's own wrapper.
Prints one line per violation and exits 1; exits 0 when the direction holds.
"""
import os
import re
import subprocess
import sys


def read_layers(readme):
    """file name -> (layer, position in the global bottom-to-top order)."""
    order = {}
    in_section = False
    with open(readme, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_section = line.strip() == "## Layers"
                continue
            m = re.match(r"\|\s*(\d+)\b", line) if in_section else None
            if not m:
                continue
            layer = int(m.group(1))
            columns = line.split("|")  # | layer | header | files | owns |
            for name in re.findall(r"`([\w.]+\.[ch])`", " ".join(columns[2:4])):
                if name in order:
                    sys.exit(f"{readme}: {name} is in two rows of the layer table")
                order[name] = (layer, len(order))
    if not order:
        sys.exit(f"{readme}: no layer table (a '## Layers' section with rows '| N | ...')")
    return order


def shim_files(shim_dir):
    """(name, path) of the shim's sources: the folder's own, and each CPU's in arch/<cpu>/."""
    for name in sorted(os.listdir(shim_dir)):
        yield name, os.path.join(shim_dir, name)
    arch = os.path.join(shim_dir, "arch")
    for cpu in sorted(os.listdir(arch)) if os.path.isdir(arch) else []:
        for name in sorted(os.listdir(os.path.join(arch, cpu))):
            yield name, os.path.join(arch, cpu, name)


def check_includes(shim_dir, layers, problems):
    for name, path in shim_files(shim_dir):
        if not name.endswith((".c", ".h")) or name == "stub.c":
            continue
        if name not in layers:
            problems.append(f"shim/{name}: not in the layer table of shim/README.md")
            continue
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m or m.group(1) not in layers:
                    continue  # proto/ and system headers
                header = m.group(1)
                if layers[header][0] > layers[name][0]:
                    problems.append(
                        f"shim/{name}:{number}: includes {header} (layer {layers[header][0]}) "
                        f"from layer {layers[name][0]}"
                    )


def check_symbols(archive, layers, problems):
    nm = os.environ.get("NM", "nm")
    out = subprocess.run([nm, "-A", archive], check=True, capture_output=True, text=True).stdout
    defined, used = {}, []
    for line in out.splitlines():
        parts = line.split(":")
        if len(parts) < 3:
            continue
        member = parts[-2]
        fields = parts[-1].split()
        if len(fields) < 2:
            continue
        kind, symbol = fields[-2], fields[-1]
        source = member[:-2] if member.endswith(".o") else member  # boot.c.o -> boot.c
        source = re.sub(r"^arch_(?:x86_64|aarch64)_", "", source)  # arch_x86_64_cpu.c -> cpu.c
        if source not in layers:
            problems.append(f"{archive}: member {member} is not in the layer table")
            continue
        if kind == "U":
            used.append((source, symbol))
        elif kind.isupper():  # global: file-static symbols are lower case
            defined[symbol] = source
    edges = {}
    for source, symbol in used:
        target = defined.get(symbol)
        if target is None or target == source:
            continue
        if layers[target][1] > layers[source][1]:
            edges.setdefault((source, target), []).append(symbol)
    for (source, target), symbols in sorted(edges.items()):
        where = "a later file of its layer" if layers[target][0] == layers[source][0] else (
            f"layer {layers[target][0]}")
        problems.append(
            f"{source} (layer {layers[source][0]}) calls up into {target}, {where}: "
            + " ".join(sorted(set(symbols)))
        )


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: shim-layers.py SHIM_DIR ARCHIVE")
    shim_dir, archive = sys.argv[1], sys.argv[2]
    layers = read_layers(os.path.join(shim_dir, "README.md"))
    problems = []
    check_includes(shim_dir, layers, problems)
    check_symbols(archive, layers, problems)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"{len(layers)} files in {max(l for l, _ in layers.values())} layers; calls go down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
