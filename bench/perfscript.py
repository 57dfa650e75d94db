"""Reading `perf record -g` data back, for the benchmarks (run.py) and the comparison
(compare/compare.py): one parser of `perf script` output, so both read perf the same way."""
import subprocess


def perf_samples(data):
    """perf script of DATA: [(comm, pid, [(ip, sym, dso), ...] leaf first)] for every sample
    (the call chain of a kernel sample starts with its kernel frames)."""
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,tid,ip,sym,dso"],
                            capture_output=True, text=True).stdout
    samples, current = [], None
    for line in script.splitlines():
        if not line.strip():
            current = None
            continue
        if not line.startswith("\t"):  # a sample header: "comm pid/tid" (pid padded)
            head = line.split()
            current = (" ".join(head[:-1]), int(head[-1].split("/")[0]), [])
            samples.append(current)
            continue
        if current is None:
            continue
        frame = perf_frame(line)
        if frame is not None:
            current[2].append(frame)
    return samples


def perf_frame(line):
    """One call-chain line of perf script ("\tIP SYM+OFF (DSO)"): (ip, sym, dso), or None when
    its address is not a number."""
    ip_text, _, rest = line.strip().partition(" ")
    dso = rest[rest.rfind("(") + 1:-1] if rest.endswith(")") else ""
    sym = rest[:rest.rfind("(")].strip() if "(" in rest else rest
    try:
        return int(ip_text, 16), sym, dso
    except ValueError:
        return None
