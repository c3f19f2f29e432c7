"""What a container or cgroup lets a training job have, as the shell prints it: the CPU quota's throttling counters
and the size of the shared memory DataLoader workers pass batches through. Not samples over time: counters since
the cgroup began, sizes at one moment — what a user pastes beside "my GPU sits idle in Kubernetes / Docker".

- cgroup `cpu.stat` (`cat /sys/fs/cgroup/.../cpu.stat`), one block per cgroup. The meaning and unit come from each
  key (Linux Documentation/scheduler/sched-bwc.rst, admin-guide/cgroup-v2.rst): `nr_periods` CFS enforcement
  periods the group was runnable in, `nr_throttled` of them in which it ran out of quota and was stopped,
  `throttled_time` (cgroup v1) nanoseconds stopped, `throttled_usec` (v2) microseconds, `usage_usec` (v2) CPU time
  used; any other `<name>_usec` / `_nsec` / `_time` key is passed over. A block is named by the path of the prompt
  that printed it (`/sys/fs/cgroup/kubepods.slice/...slice$ cat cpu.stat`, `cat /sys/fs/cgroup/cpu/cpu.stat`);
  a second `nr_periods` without a prompt between starts a new, unnamed block.
- cAdvisor's Prometheus series of the same counters (google/cadvisor docs/storage/prometheus.md; the kubelet's
  /metrics/cadvisor): `container_cpu_cfs_periods_total`, `container_cpu_cfs_throttled_periods_total`,
  `container_cpu_cfs_throttled_seconds_total` (seconds), `container_cpu_usage_seconds_total`, one cgroup per
  `pod` / `container` label pair (the pod's own cgroup where `container` is empty); a series scraped more than once
  counts its increase over the window (a counter reset, a restarted container, counted as Prometheus' increase()
  does), once: since the container began.
- `df` lines (coreutils: `Filesystem [Type] Size Used Avail Use% Mounted on`; `-h` binary K/M/G/T suffixes, `-k` / no
  option 1 KiB blocks, `-m` MiB; a header's `N[unit]-blocks` says the block size, `-B1`'s `1B-blocks` bytes) whose
  mount point is `/dev/shm`: the shared memory's size, use and free space. Other mounts are passed over, and so
  are `df -i`'s inode counts (its header: Inodes IUsed IFree) — no sizes.

The figures go to Bundle.meta[META_PREFIX + path] as {"cgroups": [{name, version, periods, throttled, throttled_s,
usage_s}], "shm": [{filesystem, size_mib, used_mib, avail_mib, line}]}; analysis.container_costs reads them.
"""

from __future__ import annotations

import re
from pathlib import Path

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import textio

FORMAT = "container limits (cgroup cpu.stat, df of /dev/shm)"
META_PREFIX = "container_limits:"

_STAT = re.compile(r"^\s*([a-z_.]{2,40})\s+(\d{1,20})\s*$")
_KNOWN = {"nr_periods", "nr_throttled", "throttled_time", "throttled_usec", "usage_usec", "user_usec",
          "system_usec", "nr_bursts", "burst_usec", "burst_time", "wait_sum", "core_sched.force_idle_usec",
          "nice_usec"}
# a prompt or command that prints a cgroup file: `...$ cat cpu.stat`, `# cat /sys/fs/cgroup/cpu/cpu.stat`
# (a conda env's `(base) `,) then `user@host:/path$`, `/path#`, `$`, or RHEL's `[user@host dir]$`
_PROMPT = re.compile(r"^(?:\([^()\n]{1,60}\)\s+)?(?P<cwd>\[[^\]\n]{0,200}\]|\S{0,400}?)[$#>]\s*(?P<cmd>\S.{0,400})$")
_CAT = re.compile(r"\bcat\s+(?P<path>\S*cpu\.stat)\b")
# df's header: sizes (`-h`: Size), blocks of a size it names (`1K-blocks`, `1B-blocks` with -B1, `1M-blocks`,
# POSIX `1024-blocks` / `512-blocks`), or inodes (`-i`: counts, no sizes); `-T` adds a Type column
_DF_HEADER = re.compile(r"^\s*Filesystem\s+(?:Type\s+)?(?:Size|(?P<block>\d+)(?P<unit>[KMGTP]?)(?:i?B)?-blocks|"
                        r"(?P<inodes>Inodes))\s+(?:Used|IUsed)\s+(?:Avail|IFree)", re.I)
_DF_LINE = re.compile(r"^\s*(?P<fs>\S{1,200})\s+(?:[A-Za-z][\w.-]{0,40}\s+)?(?P<size>\d+(?:[.,]\d+)?[KMGTP]?)\s+"
                      r"(?P<used>\d+(?:[.,]\d+)?[KMGTP]?)\s+(?P<avail>\d+(?:[.,]\d+)?[KMGTP]?)\s+(?P<pct>\d{1,3}%|-)"
                      r"\s+(?P<mount>/\S{0,200})\s*$")
_PROM = re.compile(r"^(?P<name>container_cpu_(?:cfs_periods_total|cfs_throttled_periods_total|"
                   r"cfs_throttled_seconds_total|usage_seconds_total))(?:\{(?P<labels>[^{}]{0,2000})\})?\s+"
                   r"(?P<value>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:\s+\d{10,13})?\s*$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.){0,400})"')
_PROM_KEYS = {"container_cpu_cfs_periods_total": "periods", "container_cpu_cfs_throttled_periods_total": "throttled",
              "container_cpu_cfs_throttled_seconds_total": "throttled_s",
              "container_cpu_usage_seconds_total": "usage_s"}
_SUFFIX_MIB = {"K": 1 / 2**10, "M": 1.0, "G": 2**10, "T": 2**20, "P": 2**30}


def _df_scale(line: str) -> float | None:
    """MiB per unit of a df command's bare numbers: -m MiB, -g GiB, else 1 KiB blocks (-k, the default); None for
    -i (inode counts, no sizes). Only df's own options: not those of a grep it is piped into."""
    opts = " ".join(re.findall(r"\s-([A-Za-z]{1,8})\b", line.split("|")[0]))
    return None if "i" in opts else 1.0 if "m" in opts else 2**10 if "g" in opts else 1 / 2**10


def _header_scale(header: re.Match, scale: float | None) -> float | None:
    """MiB per unit under a df header: its `N[unit]-blocks`, None under Inodes, else (Size: suffixed) as it was."""
    if header.group("inodes"):
        return None
    if header.group("block"):
        return int(header.group("block")) * {"": 1 / 2**20, **_SUFFIX_MIB}[header.group("unit").upper()]
    return scale if scale is not None else 1 / 2**10


def _size_mib(text: str, scale: float) -> float:
    """`64M`, `1.5G` (df -h: binary units; -H would be decimal, not told apart) or a bare count of `scale` MiB."""
    text = text.replace(",", ".")
    if text[-1] in _SUFFIX_MIB:
        return float(text[:-1]) * _SUFFIX_MIB[text[-1]]
    return float(text) * scale


def _kind(line: str) -> str:
    """One line's part in a paste: 'stat', 'df' (/dev/shm), 'mount' (another df line), 'header', 'prompt', 'blank',
    or 'other'."""
    s = line.strip()
    if not s or s in ("...", "…"):
        return "blank"
    if (m := _STAT.match(s)) and (m.group(1) in _KNOWN or m.group(1).endswith(("_usec", "_nsec", "_time"))):
        return "stat"
    if _DF_HEADER.match(s) or s.startswith(("# HELP ", "# TYPE ")):
        return "header"
    if _PROM.match(s):
        return "series"
    if m := _DF_LINE.match(s):
        return "df" if m.group("mount") == "/dev/shm" else "mount"  # another mount: understood, passed over
    if _PROMPT.match(s) or s.startswith(("cat ", "df ")):
        return "prompt"
    return "other"


def sniff(head: str) -> bool:
    """A cpu.stat block (nr_periods with nr_throttled) or a df line of /dev/shm, in a paste of little else: at most
    one line in five outside the two grammars and the prompts that printed them (a log that mentions them is a
    log)."""
    lines = head.splitlines()[:200]
    kinds = [_kind(ln) for ln in lines]
    keys = {m.group(1) for ln in lines if (m := _STAT.match(ln.strip()))}
    found = ({"nr_periods", "nr_throttled"} <= keys) or "df" in kinds or (
        "container_cpu_cfs_periods_total" in head and "container_cpu_cfs_throttled_periods_total" in head)
    counted = [k for k in kinds if k != "blank"]
    return found and sum(k == "other" for k in counted) * 5 <= len(counted)


def read(path: str | Path, **_opts) -> schema.Bundle:
    """The cgroups' CPU-quota counters and /dev/shm's size of a paste (see the module docstring) into Bundle.meta."""
    path = Path(path)
    src = str(path)
    text = textio.read_text(path)
    groups: list[dict] = []
    shm: list[dict] = []
    name, block = "", None
    scale: float | None = 1 / 2**10  # MiB per bare number of a df line; None under df -i (inode counts)
    skips = schema.SkipCounter(src)
    series: dict[tuple[str, str, str], list[float]] = {}  # (cgroup, quantity, cpu) -> [last, increase, scrapes]

    def close() -> None:
        if block and "nr_periods" in block:
            groups.append(_group(name or f"cgroup {len(groups) + 1}", block))

    for no, raw in enumerate(text.splitlines(), start=1):
        kind = _kind(raw)
        s = raw.strip()
        if kind == "stat":
            key, value = _STAT.match(s).groups()
            if block is None or (key == "nr_periods" and "nr_periods" in block):
                close()
                block, name = {}, name if block is None else ""
            block[key] = int(value)
        elif kind == "prompt":
            close()
            block = None
            m = _PROMPT.match(s)
            cmd = m.group("cmd") if m else s
            if cat := _CAT.search(cmd):
                where = cat.group("path")
                cwd = m.group("cwd").rsplit(":", 1)[-1] if m and not m.group("cwd").startswith("[") else ""
                cwd = "" if cwd.startswith("~") else cwd  # a home directory or RHEL's base name: no path
                name = where if where.startswith("/") else (f"{cwd.rstrip('/')}/{where}" if cwd else where)
                name = re.sub(r"/cpu\.stat$", "", name) or name
            elif re.match(r"df\b", cmd):
                scale, name = _df_scale(" " + cmd), ""
        elif kind == "header" and (m := _DF_HEADER.match(s)):
            scale = _header_scale(m, scale)
        elif kind == "series":
            m = _PROM.match(s)
            _series(series, m.group("name"), dict(_LABEL.findall(m.group("labels") or "")), float(m.group("value")))
        elif kind == "df" and scale is None:
            skips.skip(no, "inode counts (df -i), not sizes")
        elif kind == "df":
            m = _DF_LINE.match(s)
            shm.append({"filesystem": m.group("fs"), "size_mib": _size_mib(m.group("size"), scale),
                        "used_mib": _size_mib(m.group("used"), scale),
                        "avail_mib": _size_mib(m.group("avail"), scale), "line": no})
        elif kind == "other":
            skips.skip(no, "not a cpu.stat, df or prompt line")
    close()
    groups += _prom_groups(series)
    if not groups and not shm:
        raise InputError(f"{src}: no cpu.stat block with nr_periods and no df line of /dev/shm")
    bundle = schema.Bundle(inputs=[src], meta={META_PREFIX + src: {"cgroups": groups, "shm": shm}})
    warning = skips.warning(rows_read=len(groups) + len(shm))
    if warning:
        bundle.warnings.append(warning)
    return bundle


def _series(series: dict, metric: str, labels: dict[str, str], value: float) -> None:
    """One cAdvisor sample into series[(cgroup, quantity, cpu)] = [last, increase, scrapes]: per-CPU usage adds up
    (each CPU's series is kept apart by its label, then summed in _prom_groups). A value below the last is a counter
    that started again from 0 (the container restarted): the increase adds the new value, as Prometheus' increase()
    counts a reset."""
    pod = labels.get("pod") or labels.get("pod_name") or labels.get("container_label_io_kubernetes_pod_name", "")
    container = labels.get("container") or labels.get("container_name") or ""
    cgroup = (f"{pod}/{container}" if pod and container and container != "POD" else pod or container
              or labels.get("id") or "cgroup")
    key = (cgroup, _PROM_KEYS[metric], labels.get("cpu", ""))
    got = series.setdefault(key, [value, 0.0, 0])
    got[1] += (value if value < got[0] else value - got[0]) if got[2] else 0.0
    got[0], got[2] = value, got[2] + 1


def _prom_groups(series: dict) -> list[dict]:
    """The cAdvisor series as cgroups: each quantity's increase over the scrapes (its value with one scrape)."""
    per: dict[str, dict[str, float]] = {}
    for (cgroup, quantity, _cpu), (last, increase, scrapes) in series.items():
        amount = last if scrapes == 1 else increase
        per.setdefault(cgroup, {})[quantity] = per.get(cgroup, {}).get(quantity, 0.0) + amount
    return [{"name": name, "version": "cadvisor", "periods": int(q.get("periods", 0)),
             "throttled": int(q.get("throttled", 0)), "throttled_s": q.get("throttled_s"), "usage_s": q.get("usage_s")}
            for name, q in per.items() if q.get("periods")]


def _group(name: str, stat: dict[str, int]) -> dict:
    """One cgroup's counters in seconds: v2 names its unit in the key (`_usec`), v1's throttled_time is ns."""
    v2 = "throttled_usec" in stat or "usage_usec" in stat
    throttled = (stat["throttled_usec"] / 1e6 if "throttled_usec" in stat else
                 stat["throttled_time"] / 1e9 if "throttled_time" in stat else None)
    return {"name": name, "version": 2 if v2 else 1, "periods": stat.get("nr_periods", 0),
            "throttled": stat.get("nr_throttled", 0), "throttled_s": throttled,
            "usage_s": stat["usage_usec"] / 1e6 if "usage_usec" in stat else None}
