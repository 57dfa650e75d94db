#!/usr/bin/env python3
"""install-layout.py — `meson install` puts each file where the README says, and the man
pages document every command and option the programs' --help lists.

Usage: install-layout.py SOURCE_ROOT BUILD_ROOT

1. Installs the build into a scratch DESTDIR (`meson install --destdir`, no rebuild) and
   checks every path of the README's "Install" table (`PREFIX/...` in its first column, with
   meson's prefix, bindir, libdir, includedir, mandir and datadir) is there, executables
   executable; the pkg-config file links the archive whole; a program built with
   `pkg-config --cflags --libs ospreyprof` against the installed tree has the profiler's
   constructor in it and runs unchanged with the profiler off.
2. Runs `osprey --help`, each command's --help, `ospreyd --help` and
   `ospreyd --attach-pid 1 --help`, and fails for each command or option they list that
   docs/osprey.1 or docs/ospreyd.8 (and, for osprey, docs/completion/osprey.bash) leaves out.
Prints one line per problem and exits 1; 0 when there is none.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

problems = []


def problem(text):
    problems.append(text)
    print(text)


def meson_dirs(build):
    out = subprocess.run(["meson", "introspect", "--buildoptions", build], capture_output=True,
                         text=True, check=True)
    options = {o["name"]: o["value"] for o in json.loads(out.stdout)}
    prefix = options["prefix"]
    dirs = {"PREFIX": prefix}
    for name in ("bindir", "libdir", "includedir", "mandir", "datadir"):
        value = options[name]
        dirs[name.upper()] = value if value.startswith("/") else os.path.join(prefix, value)
    return dirs


def readme_paths(source):
    """The first column of the README's "Install" table: `BINDIR/osprey`, ..."""
    text = open(os.path.join(source, "README.md"), encoding="utf-8").read()
    m = re.search(r"^## Install\n(.*?)(?=^## )", text, re.S | re.M)
    if m is None:
        problem("README.md: no '## Install' section")
        return []
    paths = []
    for line in m.group(1).split("\n"):
        cell = re.match(r"\|\s*`([A-Z]+/[^`]*)`", line)
        if cell:
            paths.append(cell.group(1))
    if not paths:
        problem("README.md: the Install section has no table of installed paths")
    return paths


def check_install(source, build):
    dirs = meson_dirs(build)
    dest = tempfile.mkdtemp(prefix="osprey-install.")
    try:
        run = subprocess.run(["meson", "install", "-C", build, "--no-rebuild", "--quiet",
                              "--destdir", dest], capture_output=True, text=True)
        if run.returncode != 0:
            problem(f"meson install --destdir failed: {run.stdout}{run.stderr}")
            return
        for path in readme_paths(source):
            top, rest = path.split("/", 1)
            if top not in dirs:
                problem(f"README.md: {path}: {top} is not one of {', '.join(sorted(dirs))}")
                continue
            where = dest + os.path.join(dirs[top], rest)
            if not os.path.exists(where):
                problem(f"README.md names {path}, which meson install did not put at "
                        f"{os.path.join(dirs[top], rest)}")
            elif top == "BINDIR" and not os.access(where, os.X_OK):
                problem(f"{path} is installed but not executable")
        check_pkg_config(dest, dirs)
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def check_pkg_config(dest, dirs):
    pcdir = dest + os.path.join(dirs["LIBDIR"], "pkgconfig")
    pc = os.path.join(pcdir, "ospreyprof.pc")
    if not os.path.exists(pc):
        return  # the README table check has said so
    text = open(pc, encoding="utf-8").read()
    libs = re.search(r"^Libs:(.*)$", text, re.M)
    if libs is None or not re.search(r"-Wl,--whole-archive\s+-l:libospreyprof\.a\s+"
                                     r"-Wl,--no-whole-archive", libs.group(1)):
        problem(f"ospreyprof.pc: Libs does not link the archive whole: {libs and libs.group(1)}")
        return
    if shutil.which("pkg-config") is None or shutil.which("cc") is None:
        return
    env = dict(os.environ, PKG_CONFIG_PATH=pcdir)
    flags = subprocess.run(["pkg-config", "--define-variable=prefix=" + dest + dirs["PREFIX"],
                            "--cflags", "--libs", "ospreyprof"], capture_output=True, text=True,
                           env=env)
    if flags.returncode != 0:
        problem(f"pkg-config ospreyprof: {flags.stderr.strip()}")
        return
    with tempfile.TemporaryDirectory(prefix="osprey-pc.") as work:
        src = os.path.join(work, "prog.c")
        with open(src, "w") as f:
            f.write('#include <stdio.h>\n#include <osprey_prof.h>\n'
                    'int main(void) { puts("unchanged"); return 3; }\n')
        exe = os.path.join(work, "prog")
        build = subprocess.run(["cc", src, "-o", exe] + flags.stdout.split(), capture_output=True,
                               text=True)
        if build.returncode != 0:
            problem(f"cc prog.c $(pkg-config --cflags --libs ospreyprof): {build.stderr.strip()}")
            return
        nm = subprocess.run(["nm", exe], capture_output=True, text=True)
        if "osp_prof_thread_register" not in nm.stdout:
            problem("a program linked by pkg-config's flags lacks the shim (osp_prof_*)")
        env = {k: v for k, v in os.environ.items() if not k.startswith("OSPREY_")}
        ran = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60)
        if ran.returncode != 3 or ran.stdout != "unchanged\n" or ran.stderr != "":
            problem(f"the linked program, profiler off: status {ran.returncode}, "
                    f"stdout {ran.stdout!r}, stderr {ran.stderr!r}")


def roff_text(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"\\f[BIRP]|\\f\(..|\\&", "", text)
    return text.replace("\\-", "-").replace("\\(em", "-")


OPTION = re.compile(r"(?<![\w./-])(--?[A-Za-z][\w-]*)")


def help_of(argv):
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        problem(f"{' '.join(argv)}: status {run.returncode}")
    return run.stdout


def words_missing(listed, text, what, doc):
    for word in sorted(listed):
        if not re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text):
            problem(f"{doc} does not document {what} {word}")


def check_docs(source, build):
    osprey = os.path.join(build, "tools", "osprey")
    ospreyd = os.path.join(build, "daemon", "ospreyd")
    man1 = roff_text(os.path.join(source, "docs", "osprey.1"))
    man8 = roff_text(os.path.join(source, "docs", "ospreyd.8"))
    completion = open(os.path.join(source, "docs", "completion", "osprey.bash"),
                      encoding="utf-8").read()

    main_help = help_of([osprey, "--help"])
    commands = set(re.findall(r"^\s*(?:usage:)?\s*osprey ([a-z]+)\b", main_help, re.M))
    if not commands:
        problem("osprey --help lists no command")
    options = set(OPTION.findall(main_help))
    for command in sorted(commands):
        if not re.search(r"osprey " + command + r"\b", man1):
            problem(f"docs/osprey.1 does not document the command osprey {command}")
        if not re.search(r"\b" + command + r"\b", completion):
            problem(f"docs/completion/osprey.bash does not complete the command {command}")
        options |= set(OPTION.findall(help_of([osprey, command, "--help"])))
    words_missing(options, man1, "the option", "docs/osprey.1")
    # the completion offers the options a user types (not the words inside their descriptions)
    typed = {o for o in options if o.startswith("--") or re.fullmatch(r"-[A-Za-z]", o)}
    typed -= {"--profile"} if "--profile" in completion else set()
    for option in sorted(typed):
        if option in man1 and not re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])",
                                             completion):
            if re.search(r"^\s+" + re.escape(option) + r"\b", main_help, re.M) or \
                    re.search(r"\[" + re.escape(option) + r"\b", main_help):
                problem(f"docs/completion/osprey.bash does not complete the option {option}")

    daemon_help = help_of([ospreyd, "--help"]) + help_of([ospreyd, "--attach-pid", "1", "--help"])
    words_missing(set(OPTION.findall(daemon_help)), man8, "the option", "docs/ospreyd.8")


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().split("\n")[2], file=sys.stderr)
        return 2
    source, build = sys.argv[1], sys.argv[2]
    check_docs(source, build)
    check_install(source, build)
    if problems:
        print(f"install-layout: {len(problems)} problems")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
