"""The peak RSS a benchmark's child interpreter reports of itself; its source is put at the top of each child's
code (benchmarks/diagnose.py, ingest.py, kineto_load.py run their children with `python -c`)."""

import resource


def peak_rss_mib() -> float:
    """This interpreter's own peak resident set (MiB): VmHWM, its address space's since exec. ru_maxrss also keeps
    the pre-exec peak of the forked copy of the parent, which counted a benchmark's generator (3,363 MiB for a
    1,651 MiB run at 2,048 GPUs); it stands in only where /proc is not there."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
