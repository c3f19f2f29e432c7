"""A log line's prefixes, read once before any scanner sees the line: who printed it (the rank), when, at what
level, and through which logger — so the step grammar sees only the message.

Ranks, from the launcher or logger that tags each line:
  torchrun `[rank3]:` / `[default3]:`, `[RANK 3]` / `[Rank 3]` / `[rank: 3]` (XTuner, DeepSpeed, Lightning), a bare
  `rank3:` / `rank 3:`, Open MPI's `--tag-output` `[1,3]<stdout>:`, Horovod's gloo `[3]<stdout>:`, Slurm `srun -l`'s
  `3: `, MXNet's `Node[3] ` after the time (the kvstore rank), Levanter's `- 3 - name - file.py:9 - INFO :: ` after
  the time (the JAX process index), icefall's `[train.py:9] (3/8) ` after a source location (rank of world; one that moves on with the clock is a count), Ray's `(RayTrainWorker pid=1193, ip=10.0.0.1)` (a
  per-process id: the rank a worker's first line names, `[rank=N, world_size=...]`, else the order the processes
  first print), an actor's `[3] [ReferenceModel-3/4] ` (Monarch actors in torchforge: the mesh's rank; another
  mesh's actors are other processes); else the rank in the file's path
  (`rank3.log`, `rank_03/`, `worker-3`, torch elastic's `attempt_0/3/stdout.log`): see `rank_from_path`.
Times: ISO `2024-01-15 10:00:01,123` (or `2024/01/15`, `T`, a zone), logging's `%m/%d/%Y`, glog / absl
  `I0115 10:00:30.123456 1234 file.py:12]` (also bracketed, without the thread id: c10's `[E1218 20:27:21.42 f.cc:62]`),
  a time of day without a date (logback's `10:41:07.547 [main] INFO`, log4j's `,SSS`, logging's `%H:%M:%S`, rich's
  `[10:41:07]`, or after a month-day: `09-24 22:50:46`, detectron2's `[03/15 07:48:04 d2.utils.events]:`): glog's and
  these are placed by `Prefix._undated`,
  a tag word before the date (DLLogger's `DLL 2021-03-12 10:00:00.1 - `), a date inside a logger's bracket
  (`[NeMo I 2025-08-19 14:02:29 nemo_logging:393]`, `[2024-06-28 18:30:50.171: W f.py:38]`), MLPerf's
  `:::MLLOG {"time_ms": ...}`, structlog's `timestamp='...'`.
Kernel and system logs: dmesg's seconds since boot `[ 1843.308145]` (kept as `uptime`; a wall time only once a
  line of the file states both, e.g. syslog's `... kernel: [68183.6] ...`, which fixes the boot time; a dmesg
  continuation line, indented under the stamp, keeps its line's uptime), `dmesg -T`'s `[Sun Feb 20 06:16:58 2022]`,
  `dmesg -H`'s `[Feb22 04:01]` / `[  +0.000001]` (no year, or a delta: no time), syslog / `journalctl`'s
  `Mar  3 12:00:01 host kernel: ` (the year of an earlier full date, else no time) and `journalctl -o short-iso`'s
  `2024-03-03T12:00:01+0000 host kernel: `: the host such a line names is kept in `host`.
Logger heads after the time: loguru `| INFO     | module:function:line - `, logging's `- name - LEVEL - `, `name
  LEVEL: ` and `LEVEL:name:`, torch elastic's `name: [LEVEL] `, Hugging Face's `>> `, and bracketed tags (`[XTuner]`,
  `[INFO]`, `[logging.py:96:log_dist]`, `[INFO|trainer.py:2463]`) — a bracket holding a counter (`[12/100]`,
  `[batch=3/9]`, `[100] k=v`) or a mode word (`[eval]`) is the message's, not a tag. pdsh's `host: ` label before a
  time stamp or tag is dropped (the host is the file's). Every pattern is anchored and bounded (no nested
  quantifiers).
"""

from __future__ import annotations

import calendar
import re
from functools import lru_cache
from pathlib import PurePath

from playbook.readers import local_time, textio
from playbook.readers.collected import strip_text_escapes
from playbook.readers.step_log.vocab import NAT

_LEVEL_WORDS = r"TRACE|DEBUG|INFO|NOTICE|SUCCESS|WARN|WARNING|ERROR|CRITICAL|FATAL|EXCEPTION"
LOUD = ("WARN", "WARNING", "ERROR", "CRITICAL", "FATAL", "EXCEPTION", "W", "E", "F")  # levels worth counting

_RANK_PREFIX = re.compile(r"^\s*(?:\[(?:rank|default|r)\s*[:=]?\s*(\d+)\]\s*:?|\[(?:\d+,)?(\d+)\]<std(?:out|err)>:|"
                          r"(\d{1,5}):(?= )|rank\s?(\d{1,6})\s*:(?=\s))\s*", re.IGNORECASE)
# Ray's `(RayTrainWorker pid=1193, ip=10.0.0.1)`; SkyPilot's `(head, rank=0, pid=23862)`, `(worker1, rank=1,
# pid=22755, ip=172.31.81.91)`, `(node-2, head, rank=0, pid=...)`, `(setup pid=2173)` (rank: the node's)
_RAY = re.compile(r"^\s*\((?:[\w.:-]{1,60}(?:, | ))?(?:[\w.:-]{1,60}, )?(?:rank=(\d{1,6}), )?pid=(\d+)"
                  r"(?:, ip=([\w.:-]{1,60}))?\)\s*")
_RAY_RANK = re.compile(r"\[rank=(\d+), world_size=")
# an actor's prefix (Monarch actors, as torchforge's GRPO app prints them: meta-pytorch/torchforge#372): `[3]
# [ReferenceModel-3/4] 2025-10-10 14:05:19 INFO ...`: the process index, then the actor mesh's name and the actor's
# rank of the mesh's size. The first mesh seen keeps its stated ranks; another mesh's actors are other processes
# (ranked in the order they first print: _process)
_ACTOR = re.compile(r"^\s*\[(\d{1,6})\] \[([A-Za-z][\w.]{0,60})-(\d{1,6})/(\d{1,6})\]\s*")
# `kubectl logs --prefix`'s `[pod/NAME/CONTAINER] ` (a pod is a process: its rank as Ray's workers get theirs)
_KUBECTL = re.compile(r"^\s*\[pod/([^\]\s/]{1,253})/([^\]\s]{1,63})\]\s*")
# the container runtime's (CRI) log line after its time: `2024-01-15T10:00:00.123456789Z stdout F ` (F: a full
# line, P: part of one)
_CRI_STREAM = re.compile(r"^(?:stdout|stderr) [FP] ")
_RANK_INLINE = re.compile(r"\[Rank\s+(\d+)\]")
# MXNet's kvstore worker tag after the time (example/image-classification/common/fit.py: head = '%(asctime)-15s
# Node[' + str(kv.rank) + '] %(message)s'): the worker's rank in the distributed kvstore
_NODE_TAG = re.compile(r"^Node\[(\d{1,6})\] ")
# Levanter's head after its time (logging.py init_logger: f"%(asctime)s - {jax.process_index()} - %(name)s -
# %(filename)s:%(lineno)d - %(levelname)s :: %(message)s"): the JAX process index, one host of a multi-host job
_PROCESS_DASH = re.compile(r"^-\s(\d{1,6})\s-\s[\w.<>-]{1,80}\s-\s[\w.-]{1,80}:\d{1,6}\s-\s(" + _LEVEL_WORDS +
                           r")\s::\s")
# seconds are optional: a log shipper's "2025-02-18 12:54 " minute stamp before the line it carries
_ISO = re.compile(r"^\s*+\[?\s*+(\d{4})[-/](\d{2})[-/](\d{2})[ T,](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?"
                  r"\s*(Z|[+-]\d{2}:?\d{2})?\s*\]?\s*")
# a program's tag word before its time stamp and a dash (DLLogger's `DLL 2021-03-12 10:00:00.100123 - `)
_TIME_TAG = re.compile(r"^\s*(?!(?:" + _LEVEL_WORDS + r")\s)[A-Z]{2,8}\s+(?=\d{4}[-/]\d{2}[-/]\d{2}[ T]\d{2}:)")
_TAG_DASH = re.compile(r"^-\s+")
_US_DATE = re.compile(r"^\s*\[?(\d{2})/(\d{2})/(\d{4}|\d{2}),? (\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?\s*\]?\s*")
_GLOG = re.compile(r"^\s*\[?([IWEFVD])(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:\s+\d+)?\s+[^\]\s]*\]\s*")
# a time of day without a date, before a space: logback's default `%d{HH:mm:ss.SSS}`, log4j's `HH:mm:ss,SSS`,
# logging's `datefmt="%H:%M:%S"` (rich's `[%X]` in brackets); with a month-day before it, no year: `%m-%d %H:%M:%S`,
# `%m/%d %H:%M:%S` (detectron2's, also inside its bracket with the logger's name: `[03/15 07:48:04 d2.utils.events]:`)
_TIME_OF_DAY = re.compile(r"^\s*(\[)?(?:(\d{2})[-/](\d{2}) )?(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(?(1)\])\s+")
# a date with a two-digit year before a time of day: logging's `datefmt='%y-%m-%d %H:%M:%S'` (mmsr, BasicSR 0.x,
# ESRGAN, EDVR, traiNNer: `22-12-06 08:58:44.018 - INFO:`), or `%d-%m-%y` / `%d.%m.%y`: the fields' order is not
# in the line (22-12-06 is a date either way), so only the time of day is read (Prefix._time)
_SHORT_DATE = re.compile(r"^\s*(\[)?(\d{2}([-.])\d{2}\3\d{2})[ _](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(?(1)\])\s+")
_MONTH_DAY_IN = re.compile(r"^(\d{2})[-/](\d{2}) (\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?\s")
# a leading bracket of at most 160 characters without a nested bracket: a tag when it holds a level, a source
# location, a date or a single short name — not a counter, a `key=value` or a mode word
_BRACKET = re.compile(r"^\s*\[([^\[\]\n]{1,160})\]\s*:?\s*")
_TAG_LEVEL = re.compile(r"(?:^|[\s|])(" + _LEVEL_WORDS + r")(?=$|[\s|\]:])|(?:^|\s)([IWEF])\s", re.IGNORECASE)
_TAG_WHERE = re.compile(r"[\w.-]\.(?:py|cc|cpp|c|h|rs|go|java|scala|jl):\d+|^[\w.-]+:\d+(?::\w+)?$")
_TAG_NAME = re.compile(r"^[A-Za-z][\w.-]{0,23}$")
_TAG_RANK = re.compile(r"^(?:rank|default)\s*[:=]?\s*(\d+)(?:\s*/\s*\d+)?$", re.IGNORECASE)
_RANK_OF_WORLD = re.compile(r"\((\d{1,6})/(\d{1,6})\)\s+")
# pdsh's "host: " label (DeepSpeed's multi-node launcher) before a time stamp or a bracketed tag: a name with a digit
_HOST_LABEL = re.compile(r"^\s*(?=[\w.-]{0,63}\d)[A-Za-z0-9][\w.-]{0,63}:\s+(?=\[|\d{4}[-/])")
_MODE_WORDS = {"train", "training", "eval", "evaluation", "val", "valid", "validation", "test", "testing", "predict",
               "sanity"}
_DATE_IN = re.compile(r"(\d{4})[-/](\d{2})[-/](\d{2})[ T,_](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?")
_LOGGER_HEAD = re.compile(
    r"^\s*(?:\|\s*(?P<l1>" + _LEVEL_WORDS + r")\s*\|\s*[^\s|]{1,200}\s+-\s+"  # loguru
    r"|-\s+(?:[\w.<>-]{1,80}\s+-\s+)?(?P<l2>" + _LEVEL_WORDS + r")\s+-\s+(?:[\w.<>-]{1,80}\s+-\s+)?"  # logging dashes
    r"|[\w.<>-]{1,80}\s+(?P<l3>" + _LEVEL_WORDS + r"):\s+"  # "maskrcnn_benchmark.trainer INFO: "
    r"|[\w.<>-]{1,80}:\s+\[(?P<l5>" + _LEVEL_WORDS + r")\]\s+"  # torch elastic's "name: [ERROR] "
    r"|(?P<l4>" + _LEVEL_WORDS + r")(?::[\w.<>-]{1,80}:|\s+(?=\S))"  # basicConfig's "INFO:root:", "INFO step ..."
    r"|>>\s+)")  # Hugging Face's "[INFO|trainer.py:2134] 2024-... >> "
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
MON = r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# dmesg: seconds since boot (printk's "[%5lu.%06lu]": six decimals, so a message's own "[0.5]" is no stamp);
# `dmesg -T`'s full date; `dmesg -H`'s minute without a year, and its deltas
_UPTIME = re.compile(r"^\s*\[\s{0,12}(\d{1,10}\.\d{6})\]\s?")
_DMESG_T = re.compile(r"^\s*\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) " + MON +
                      r" {1,2}(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})\]\s*")
_DMESG_H = re.compile(r"^\s*\[(?:" + MON + r"\d{1,2} \d{2}:\d{2}|\s{0,12}\+\d{1,10}\.\d{6})\]\s*")
# syslog / journalctl's default: "Mar  3 12:00:01 host tag[pid]: " (no year); after an ISO time (journalctl -o
# short-iso) only "host kernel: " or "host tag[pid]: ", so that an application's "12:00:01 train step: 5" is no host
_SYSLOG = re.compile(r"^\s*" + MON + r" {1,2}(\d{1,2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))? "
                     r"([\w.-]{1,63}) [^\s:\[]{1,60}(?:\[\d{1,10}\])?:\s?")
_SYSLOG_HOST = re.compile(r"^([A-Za-z0-9][\w.-]{0,62}) (?:kernel|[^\s:\[]{1,60}\[\d{1,10}\]):\s?")
_STRUCT_TIME = re.compile(r"\b(?:timestamp|time|ts|asctime|@timestamp)\s*[=:]\s*['\"]?(\d{4})-(\d{2})-(\d{2})[ T]"
                          r"(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?\s*(Z|[+-]\d{2}:?\d{2})?")
_STRUCT_LEVEL = re.compile(r"\blevel\s*[=:]\s*['\"]?(\w+)")
_MLLOG_TIME = re.compile(r"\"time_ms\"\s*:\s*(\d{10,16})")
_PATH_RANK = re.compile(r"(?:^|[^a-z0-9])(?:rank|worker|proc|process)[_\-.]?(\d{1,6})(?=$|[^a-z0-9])", re.IGNORECASE)
_ELASTIC = re.compile(r"attempt_\d+/(\d{1,6})/(?:stdout|stderr|error)\.\w+$")
MAX_STEPS = 8  # prefixes read per line: `[rank3]: [2024-...] [INFO] [file.py:9] [Rank 3] ...` has five
LEAP_YEAR = 1972  # where month-days without a year are placed (a leap year: glog's `I0229` exists in it)
DAY_NS = 86_400 * 1_000_000_000
HALF_YEAR_NS = 182 * DAY_NS


def rank_from_path(path: str | PurePath) -> int:
    """The rank a file's path names (-1 when none): its name or one of its two parent folders as `rank3`,
    `rank_03`, `worker-3`, `proc3` (the innermost wins), or torch elastic's `attempt_N/<rank>/stdout.log`."""
    p = PurePath(path)
    if (m := _ELASTIC.search(p.as_posix())):
        return int(m.group(1))
    for part in (p.name, *[q.name for q in list(p.parents)[:2]]):
        if (m := _PATH_RANK.search(part)):
            return int(m.group(1))
    return -1


def _rank(digits: str) -> int:
    """A rank's number; -1 (unknown) beyond int32, where torch.distributed's ranks live (a 20-digit number in
    brackets is an id, and would not fit the int64 rank column)."""
    return int(digits) if len(digits) < 10 else -1


@lru_cache(maxsize=4096)
def _offset_ns(tz: str, y: int, mo: int, d: int, h: int) -> int:
    """UTC offset (ns) of local time in `tz` at that hour (cached: one zoneinfo lookup per hour of log)."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    off = datetime(y, mo, d, h, tzinfo=ZoneInfo(tz)).utcoffset()
    return int(off.total_seconds() * 1e9) if off is not None else 0


def to_ns(y, mo, d, h, mi, s, frac, tz, zone=None) -> int:
    """int64 ns UTC of a wall-clock reading in zone `zone` (`Z`, `+02:00`) or else time zone `tz`; NAT if invalid
    or past what int64 ns holds (years 1677-2262: a year 3024 is damage, and would not fit the time column)."""
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 62):
        return NAT
    try:
        secs = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    except (ValueError, OverflowError):
        return NAT
    ns = secs * 1_000_000_000 + (int((frac + "000000000")[:9]) if frac else 0)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        z = zone[1:].replace(":", "")
        ns -= sign * (int(z[:2]) * 3600 + int(z[2:4] or 0) * 60) * 1_000_000_000
    elif not zone and tz and tz != "UTC":
        try:
            ns -= _offset_ns(tz, y, mo, d, h)
        except Exception:  # an unknown zone was rejected earlier; a non-existent local time keeps UTC
            pass
    return ns if NAT < ns < 2**63 else NAT


def stamp_ns(text: str, tz: str = "UTC") -> int:
    """int64 ns UTC of the first date and time in `text` (`2018-08-19T16:30:21`, torch elastic's
    `2025-05-21_15:43:03`), NAT when it holds none."""
    m = _DATE_IN.search(text)
    return to_ns(*(int(g) for g in m.groups()[:6]), m.group(7), tz) if m else NAT


class _RanksOfWorld:
    """icefall's `(rank/world)` after a source location, told from a count of a total in the same place (a script's
    `(2/3)` epoch, `(17/400)` batch of its epoch) by how one file's values move: a rank stays (each rank's own
    file), and another process's line, in its own file appended after the first or written between the first's
    lines, is stamped by its own clock, which may go back; a count moves on with the clock (and may start again
    each epoch, as interleaved ranks seem to). Once a value moves to another with the clock going on, or a second
    total appears, the file's fractions read as the first value's rank (one process counting), unless the clock
    went back at such a move first (ranks)."""

    def __init__(self):
        self.first: tuple[int, int] | None = None  # (value, world) of the file's first fraction
        self.last, self.last_t = -1, NAT
        self.ranks: bool | None = None  # True: ranks (the clock went back at a move); False: a count; None: unknown

    def rank(self, value: int, world: int, t: int) -> int | None:
        """The rank of a line whose prefix holds `(value/world)` at time `t` (NAT: none), or None (no rank)."""
        if self.first is None:
            if value >= world:
                return None  # not a rank of that world
            self.first = (value, world)
        elif self.ranks is None and (world != self.first[1] or value != self.last):
            back = world == self.first[1] and t != NAT and self.last_t != NAT and t < self.last_t
            self.ranks = back
        self.last, self.last_t = value, t if t != NAT else self.last_t
        if self.ranks is False:
            return self.first[0]  # a count (an epoch, a batch of the epoch) on one process's lines
        return value if value < world and world == self.first[1] else None


class Prefix:
    """Reads a line's rank, time, level and logger prefixes (see the module docstring). Remembers the last full
    date for glog's and syslog's year-less stamps, the boot time a kernel line fixes and Ray's process ids;
    `kinds` counts which prefixes were read."""

    def __init__(self, tz: str = "UTC", default_rank: int = -1):
        self.tz = tz or "UTC"
        self._refold = local_time.Refold(self.tz)  # the hour a daylight-saving change repeats, by line order
        self.default_rank = default_rank
        self.year: int | None = None
        self.boot_ns: int | None = None  # wall time (ns UTC) at boot, once a line states both clocks
        self.ray: dict[tuple[str, str], int] = {}
        self.mesh: str | None = None  # the first actor mesh an actor prefix names (_ACTOR)
        self._worlds = _RanksOfWorld()  # icefall's `(rank/world)`, told from an epoch's or a progress's count
        self.kinds: dict[str, int] = {}
        self.level, self.tagged = "", False  # of the last line split
        self.host = ""  # the host the last line split names (syslog / journalctl), "" when none
        self.uptime: float | None = None  # the last line's seconds since boot (dmesg), None when none
        self.last_t = NAT  # the time of the last line that had one: where an undated stamp is placed after
        self.undated = ""  # how stamps without a date were placed ("" when none was)
        self.short_date: str | None = None  # the last two-digit-year date's text (_SHORT_DATE): a change is a new day

    def _seen(self, kind: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def split(self, line: str) -> tuple[int, int, str]:
        """(rank, time ns or NAT, message) of a line; the level is left in `self.level` ("" when none)."""
        rank, t, level, host, uptime = -1, NAT, "", "", None
        by_process = False  # the rank came from a process prefix (Ray, SkyPilot, a pod, srun's task label)
        task = None  # srun's task label before the rank tag, if any
        body = strip_text_escapes(line)
        for _ in range(MAX_STEPS):
            start = body
            if uptime is None and body[:1] in " [" and (m := _UPTIME.match(body)):
                uptime, body = float(m.group(1)), body[m.end():]
                self._seen("uptime")
            if t == NAT and not host and body[:1] in " [JFMASOND" and (got := self._system(body)) is not None:
                t, host, body = got
            if rank < 0 and body[:1] in " (" and (m := _RAY.match(body)):
                rank, body, by_process = self._ray(m, body[m.end():]), body[m.end():], True
            if rank < 0 and body[:1] in " [" and (m := _KUBECTL.match(body)):
                rank, body, by_process = self._process(("pod",) + m.groups(), body[m.end():]), body[m.end():], True
                task = rank  # torchrun's `[default3]:` behind a pod's prefix: the pod's local rank 3 (_finer)
                self._seen("kubectl pod")
            if rank < 0 and body[:1] in " [" and (m := _ACTOR.match(body)):
                self.mesh = self.mesh or m.group(2)
                key, stated = ("actor", m.group(2), m.group(3)), m.group(3) if m.group(2) == self.mesh else None
                rank, body, by_process = self._process(key, body[m.end():], stated), body[m.end():], True
                self._seen("actor prefix")
            if (rank < 0 or by_process) and (m := _RANK_PREFIX.match(body)):
                inner = _rank(next(g for g in m.groups() if g is not None))
                rank, task, body = self._finer(rank, task, inner, m.group(0)), None, body[m.end():]
                by_process = m.group(3) is not None  # `srun -l`'s task label: a rank tag may follow
                task = rank if by_process else None
                self._seen("rank prefix")
            if t == NAT and (m := _HOST_LABEL.match(body)):
                body = body[m.end():]
                self._seen("host label")
            if t == NAT and (got := self._time(body)) is not None:
                t, body, glevel = got
                level = level or glevel
                if not host and (m := _SYSLOG_HOST.match(body)):  # journalctl -o short-iso
                    host, body = m.group(1), body[m.end():]
            if rank < 0 and t != NAT and body[:5] == "Node[" and (m := _NODE_TAG.match(body)):
                rank, body = _rank(m.group(1)), body[m.end():]
                self._seen("rank prefix")
            if rank < 0 and t != NAT and body[:2] == "- " and (m := _PROCESS_DASH.match(body)):
                rank, level, body = _rank(m.group(1)), level or m.group(2), body[m.end():]
                self._seen("rank prefix")
            if body[:1] in " [" and (m := _BRACKET.match(body)):
                tag = self._tag(m.group(1), t, -1 if by_process else rank)
                if tag is not None:
                    t, tagged, tlevel = tag
                    if tagged >= 0 and (by_process or rank < 0):
                        rank, task, by_process = self._finer(rank, task, tagged, m.group(1)), None, False
                    level = level or tlevel
                    body = body[m.end():]
                    # icefall's `%(asctime)s %(levelname)s [%(filename)s:%(lineno)d] (rank/world) %(message)s`: after
                    # a source location, a rank of a larger world in parentheses is the process's (not a progress)
                    if rank < 0 and _TAG_WHERE.search(m.group(1)) and (w := _RANK_OF_WORLD.match(body)) and \
                            (got := self._worlds.rank(int(w.group(1)), int(w.group(2)), t)) is not None:
                        rank, body = got, body[w.end():]
                        self._seen("rank prefix")
            if (m := _LOGGER_HEAD.match(body)) and m.end() < len(body):
                level = level or next((g for g in m.groups() if g), "")
                body = body[m.end():]
                self._seen("logger head")
            if body is start:
                break
        if t == NAT and ("time" in body or "ts" in body) and (m := _STRUCT_TIME.search(body)):
            t = to_ns(*(int(g) for g in m.groups()[:6]), m.group(7), self.tz, m.group(8))
            if (lv := _STRUCT_LEVEL.search(body)):
                level = lv.group(1)
            self._seen("key=value time")
        if t == NAT and body.startswith(":::MLL") and (m := _MLLOG_TIME.search(body)):
            ms = textio.ms_to_ns(m.group(1))  # None past int64 nanoseconds (16 digits of ms reach the year 318857)
            t = NAT if ms is None else ms
        if rank < 0 and "[Rank" in body and (m := _RANK_INLINE.search(body)):
            rank = _rank(m.group(1))
        if uptime is None and self.uptime is not None and line.startswith("        ") and body is line:
            uptime = self.uptime  # a dmesg continuation line, indented under its line's stamp
        t = self._refold(self._boot(t, uptime))
        self.last_t = t if t != NAT else self.last_t
        self.level = level.upper()
        self.tagged = rank >= 0  # the line itself named its rank (not the file's path)
        self.host, self.uptime = host, uptime
        return (rank if rank >= 0 else self.default_rank), t, body

    def _boot(self, t: int, uptime: float | None) -> int:
        """The wall time of a line: its own, which with its uptime fixes the boot time; else the boot time plus
        its uptime, once known; else NAT."""
        if uptime is None:
            return t
        if t != NAT:
            self.boot_ns = t - int(uptime * 1e9)
            return t
        if self.boot_ns is None:
            return NAT
        wall = self.boot_ns + int(uptime * 1e9)
        return wall if abs(wall) < textio.MAX_EPOCH_S * 1e9 else NAT  # a damaged uptime is no time, not an overflow

    def _system(self, body: str) -> tuple[int, str, str] | None:
        """(time, host, rest) of a kernel or system log's head (`dmesg -T`, `dmesg -H`, syslog); None otherwise."""
        if (m := _DMESG_T.match(body)):
            self._seen("time")
            y = int(m.group(6))
            self.year = y
            return to_ns(y, MONTHS.index(m.group(1).lower()) + 1, *(int(g) for g in m.groups()[1:5]), None,
                         self.tz), "", body[m.end():]
        if (m := _DMESG_H.match(body)):
            self._seen("time")
            return NAT, "", body[m.end():]  # a minute without its year, or a delta since the previous line
        if (m := _SYSLOG.match(body)):
            self._seen("syslog")
            t = NAT if self.year is None else to_ns(self.year, MONTHS.index(m.group(1).lower()) + 1,
                                                    *(int(g) for g in m.groups()[1:5]), m.group(6), self.tz)
            return t, m.group(7), body[m.end():]
        return None

    def _ray(self, m: re.Match, rest: str) -> int:
        """A Ray worker's process id → its rank (named by its first line's `[rank=N, world_size=`, or SkyPilot's
        prefix's `rank=N`) or the order in which the processes first printed (the lowest id not yet taken)."""
        self._seen("Ray / SkyPilot process")
        return self._process((m.group(2), m.group(3) or ""), rest, m.group(1))  # SkyPilot's `rank=1`

    def _finer(self, rank: int, task: int | None, inner: int, text: str) -> int:
        """The rank a tag behind a coarser prefix names: torchrun's `[rank15]:` behind a node's or process's prefix
        is the rank; its `[default3]:` (the local rank) behind srun's task label `1: ` (torchrun once per node) is
        the process (task 1, local 3), ranked in the order the processes first printed (_process)."""
        if task is None or "default" not in text.lower():
            return inner
        return self._process(("srun task", task, inner), "")

    def _process(self, key: tuple, rest: str, stated: str | None = None) -> int:
        """The rank of a process prefix's process `key`: stated by the prefix, or by its first line's `[rank=N,
        world_size=`, else the order in which the processes first printed (the lowest rank not yet taken)."""
        if key not in self.ray:
            named = _RAY_RANK.search(rest)
            stated = named.group(1) if named else stated
            used = set(self.ray.values())
            self.ray[key] = int(stated) if stated else next(i for i in range(len(used) + 1) if i not in used)
        return self.ray[key]

    def _time(self, body: str) -> tuple[int, str, str] | None:
        """(time, rest, glog level) when the body starts with a time stamp; None otherwise."""
        if (m := _TIME_TAG.match(body)) and (got := self._time(body[m.end():])) is not None:
            return got[0], _TAG_DASH.sub("", got[1], count=1), got[2]
        if body[:1] not in " [0123456789IWEFVD":
            return None
        if (m := _ISO.match(body)) and (body.lstrip()[:1] != "[" or "]" in m.group(0)):
            y = int(m.group(1))
            self.year = y
            self._seen("time")
            rest = body[m.end():]
            if rest[:3] == "std" and (c := _CRI_STREAM.match(rest)):
                rest = rest[c.end():]
            return to_ns(y, *(int(g or 0) for g in m.groups()[1:6]), m.group(7), self.tz, m.group(8)), rest, ""
        if (m := _US_DATE.match(body)):
            y = int(m.group(3))
            y += 2000 if y < 100 else 0  # rich's `[03/09/23 10:00:01]` (ColossalAI's logger)
            self.year = y
            self._seen("time")
            return (to_ns(y, int(m.group(1)), int(m.group(2)), *(int(g) for g in m.groups()[3:6]), m.group(7),
                          self.tz), body[m.end():], "")
        if (m := _SHORT_DATE.match(body)):
            self._seen("time")
            self.undated = self.undated or ("dates with a two-digit year (`%y-%m-%d` or `%d-%m-%y`, the order not in "
                                            "the line): their times of day read, the days counted at midnight")
            t = self._undated(None, None, *(int(g) for g in m.groups()[3:6]), m.group(7))
            if t != NAT and self.last_t != NAT and self.short_date not in (None, m.group(2)):
                t = self.last_t - self.last_t % DAY_NS + DAY_NS + t % DAY_NS  # a new date: the next day (one)
            self.short_date = m.group(2)
            return t, body[m.end():], ""
        if (m := _GLOG.match(body)):
            self._seen("glog")
            return self._undated(*(int(g) for g in m.groups()[1:6]), m.group(7)), body[m.end():], m.group(1)
        if (m := _TIME_OF_DAY.match(body)):
            self._seen("time of day")
            mo, d = (int(m.group(2)), int(m.group(3))) if m.group(2) else (None, None)
            return self._undated(mo, d, *(int(g) for g in m.groups()[3:6]), m.group(7)), body[m.end():], ""
        return None

    def _undated(self, mo: int | None, d: int | None, h: int, mi: int, s: int, frac: str | None) -> int:
        """ns UTC of a stamp without its year (glog's `I0815 20:41:26`, `%m-%d %H:%M:%S`) or without any date (a
        time of day). A month-day is in the year of the last full date, the next year once it falls by more than
        half a year; a time of day is on the day of the line before it, the next day once it falls by more than
        12 h (midnight). With no date before them the year and day are unknown, not guessed: a time of day is
        placed on textio.SYNTHETIC_EPOCH's day, a month-day in LEAP_YEAR, and `undated` says so (a file's note)."""
        if mo is not None:
            if self.year is None:
                self.year = LEAP_YEAR
                self.undated = f"month-days without a year (glog, `%m-%d`, `%m/%d`): placed in {LEAP_YEAR}, the year unknown"
            t = to_ns(self.year, mo, d, h, mi, s, frac, self.tz)
            if t != NAT and self.last_t != NAT and t < self.last_t - HALF_YEAR_NS:
                self.year += 1
                t = to_ns(self.year, mo, d, h, mi, s, frac, self.tz)
            return t
        if not (mi < 60 and s < 62):
            return NAT
        h %= 24  # an hour past 23 is a clock counting from the start (`[24:00:01]` elapsed): it runs on as a day does
        of_day = ((h * 60 + mi) * 60 + s) * 1_000_000_000 + (int((frac + "000000000")[:9]) if frac else 0)
        if self.last_t == NAT:
            self.undated = self.undated or (f"times of day without a date: placed on "
                                            f"{textio.SYNTHETIC_EPOCH:%Y-%m-%d} and the days after, the date unknown")
            return textio.SYNTHETIC_EPOCH.value + of_day
        t = self.last_t - self.last_t % DAY_NS + of_day  # on the day (UTC) of the line before
        return t + DAY_NS if t < self.last_t - DAY_NS // 2 else t

    def _tag(self, inner: str, t: int, rank: int) -> tuple[int, int, str] | None:
        """(time, rank, level) a leading bracket's content gives, or None when the bracket is the message's."""
        s = inner.strip()
        low = s.lower()
        if rank < 0 and (m := _TAG_RANK.match(s)):
            self._seen("rank prefix")
            return t, _rank(m.group(1)), ""
        if "=" in s or re.fullmatch(r"[\d\s/,.:%]*", s) or low in _MODE_WORDS:
            return None  # `[batch=3/9]`, `[12/100]`, `[100]`, `[eval]`: a counter or a mode, not a tag
        level = m.group(1) or m.group(2) if (m := _TAG_LEVEL.search(s)) else ""
        date = _DATE_IN.search(s)
        if not date and t == NAT and (md := _MONTH_DAY_IN.match(s)):
            self._seen("time of day")
            return self._undated(*(int(g) for g in md.groups()[:5]), md.group(6)), rank, level or ""
        if not (level or date or _TAG_WHERE.search(s) or _TAG_NAME.match(s)):
            return None
        if date and t == NAT:
            y = int(date.group(1))
            self.year = y
            t = to_ns(y, *(int(g) for g in date.groups()[1:6]), date.group(7), self.tz)
        self._seen("logger tag")
        return t, rank, level or ""
