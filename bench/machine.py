"""The machine a benchmark ran on, for the top of its results file (run.py, unwind/unwind.py):
one place that reads the CPU model, the memory and the load, so every results file says them
alike."""
import os
import platform
import subprocess
import time


def first(cmd):
    """The first line CMD prints, or "?" when it prints nothing or cannot run."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
        return out.splitlines()[0] if out else "?"
    except OSError:
        return "?"


def machine_lines(load_note=""):
    """The date, the machine (CPUs, model, memory, kernel) and the load average at start, as
    results-file list items; LOAD_NOTE follows the load."""
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return [f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
            f"- machine: {os.cpu_count()} × {model}, {mem_kb // 1024} MiB, Linux "
            f"{platform.release()} ({platform.machine()})",
            f"- load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
            + load_note]
