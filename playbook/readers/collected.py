"""What log collectors add to the text they carry, taken off before any reader sees it: terminal escapes, and the
one label a collector put before every line.

Terminal escapes (colours, cursor moves, OSC titles and links): a coloured logger (rich, colorlog, loguru), a TTY
container or `script` leaves them in a captured log; no format means anything by them.

A collector's label before every line of what it carried: Slurm `srun -l`'s task (`0: `), pdsh's host (`node7: `,
a name with a digit), `kubectl logs --prefix`'s `[pod/NAME/CONTAINER] `. One label on (nearly) every line says
nothing the file does not: it is taken off, so that the format it carries is read as it printed. Several labels name
ranks or hosts: they stay, for the readers that tell them apart (line_prefix); so does one that has another of its
kind anywhere in the head, at the end of a plain file (kubectl prints pod after pod), or, from there on, later in
the stream.

Every line break doubled (a blank line after each line: `\r\r\n` endings from a file passed twice through a
Windows tool, a paste through some web forms): each pair is one break, so tables stay tables.

The indentation a paste put before every line (a Markdown code block by indentation, a quote in an e-mail) is taken
off only when files.read_file asks (INDENT): where no format's reader recognises the text as it is and one does
without it. Indentation can be a format's meaning (`nvidia-smi -q | grep` keeps its leaves' depth). So is torchrun
`--tee`'s `[{role}{local rank}]:` on every line of one process's output (launcher_label): it names the rank of a
training log's lines (line_prefix reads it), and is taken off (INDENT) only where the file cannot be read with it —
a profiler table or a tool's output printed by that process.

A Python runtime's warnings on stderr, interleaved with a tool's output in one captured log (warnings.formatwarning's
`FILE:LINE: CATEGORY: MESSAGE` and the source line it echoes indented by two spaces; the tokenizers library's fork
notice with its three lines of advice), are taken off only when files.read_file asks (STDERR): where the file cannot
be read with them (they cut a table or a multi-line record), since readers of training logs read some warnings as
evidence.
"""

from __future__ import annotations

import contextvars
import os
import re

_ESCAPES = re.compile(rb"\x1b(?:\[[0-?]{0,32}[ -/]{0,4}[@-~]|\][^\x07\x1b\n]{0,512}(?:\x07|\x1b\\)|[@-Z\\-_])")
_ESCAPE_CUT = re.compile(rb"\x1b(?:\[[0-?]{0,32}[ -/]{0,4}|\][^\x07\x1b\n]{0,512}\x1b?)?")  # cut by a chunk's end
_KINDS = (rb" {0,6}\d{1,6}: ", rb"(?=[\w.-]{0,63}\d)[A-Za-z][\w.-]{0,63}: ", rb"\[pod/[^\]\s/]{1,253}/[^\]\s]{1,63}\] ")
_LABEL = re.compile(rb"^(?:" + rb"|".join(_KINDS) + rb")")
LABEL_SHARE = 0.9  # of the head's non-blank lines carrying one label: fewer, and it is a line's own `name: ` text
MIN_LINES = 3  # a label on one or two lines cannot be told from their text
_BREAK = re.compile(rb"\r\n|\r|\n")
_BREAKS = re.compile(rb"(?:\r\n|\r|\n)+")
_BREAK_PAIR = re.compile(rb"(?:\r\n|\r|\n){2}")


# files.read_file's retry of an indented paste: path -> the indentation to take off every line
INDENT: contextvars.ContextVar[dict[str, bytes] | None] = contextvars.ContextVar("playbook_indent", default=None)


# files.read_file's retry of a file that no reader understood with a runtime's warnings in it: the paths read without
STDERR: contextvars.ContextVar[frozenset[str] | None] = contextvars.ContextVar("playbook_stderr", default=None)
_STDERR_RECORD = re.compile(  # CPython warnings.formatwarning: "%s:%s: %s: %s\n" then "  " + the source line
    rb"^[^\n]{1,300}?:\d{1,9}: [A-Za-z_][\w.]{0,80}Warning: [^\n]*(?:\n  [^\n]*)?(?:\n|$)"
    rb"|^huggingface/tokenizers: The current process just got forked[^\n]*(?:\n|$)"  # and its advice, 3 lines
    rb"(?:To disable this warning, you can either:[^\n]*(?:\n|$)(?:[ \t]+- [^\n]*(?:\n|$)){0,2})?", re.M)
_RECORD_LINES = 4  # the most lines of one record (tokenizers' notice)


def stderr_records(text: bytes) -> int:
    """How many runtime warning records (see the module's docstring) `text` holds."""
    return sum(1 for _ in _STDERR_RECORD.finditer(text))


def drop_stderr(text: bytes) -> bytes:
    """`text` without its runtime warning records (whole lines)."""
    return _STDERR_RECORD.sub(b"", text)


def common_indent(head: str) -> str:
    """The spaces, tabs and quote marks (`> `, an e-mail's or a Markdown quote's) that every non-blank line of
    `head` starts with (the first 400 looked at; a line of quote marks alone is a blank line of the quote); "" when
    they share none."""
    lines = [ln for ln in head.split("\n")[:400] if ln.strip(" \t>")]
    prefix = os.path.commonprefix(lines) if lines else ""
    return prefix[:len(prefix) - len(prefix.lstrip(" \t>"))]


def dedent(text: str, indent: str) -> str:
    """`text` with `indent` taken off the lines that start with it (a quote's lines of quote marks alone made
    blank)."""
    out = ("\n" + text).replace("\n" + indent, "\n")[1:]
    if ">" in indent:
        out = _QUOTE_BLANK.sub("", out)
    return out


_QUOTE_BLANK = re.compile(r"(?m)^[ \t]*>[ \t>]*$")
_QUOTE_BLANK_B = re.compile(_QUOTE_BLANK.pattern.encode())


_TEXT_ESCAPES = re.compile(_ESCAPES.pattern.decode("ascii"))


def strip_escapes(text: bytes) -> bytes:
    """`text` without terminal escape sequences."""
    return _ESCAPES.sub(b"", text) if b"\x1b" in text else text


def strip_text_escapes(text: str) -> str:
    """strip_escapes for decoded text (a line handed to a reader's scanner or sniff without the text stream)."""
    return _TEXT_ESCAPES.sub("", text) if "\x1b" in text else text


_LAUNCHER = re.compile(r"\[[A-Za-z_][\w-]{0,31}?\d{1,6}\]:")  # torchrun --tee: `[default0]:`, `[rank3]:` (--role rank)


def launcher_label(head: str) -> str:
    """torchrun --tee's label when it starts at least LABEL_SHARE of the complete, non-blank lines of `head`
    (MIN_LINES or more, the first 400 looked at) and no line starts with another (another rank's); else ""."""
    lines = [ln for ln in head.split("\n")[:-1][:400] if ln.strip()]
    labels = [m.group(0) if (m := _LAUNCHER.match(ln)) else None for ln in lines]
    if len(lines) < MIN_LINES or labels[0] is None or sum(lb == labels[0] for lb in labels) < LABEL_SHARE * len(lines):
        return ""
    return "" if any(lb not in (None, labels[0]) for lb in labels) else labels[0]


def collector_label(head: bytes) -> bytes | None:
    """The one collector label that at least LABEL_SHARE of the complete, non-blank lines of `head` (MIN_LINES or
    more, the first 400 looked at) start with, and no line of `head` starts with another of its kind (another
    task, host or pod), else None."""
    lines = [ln for ln in head.split(b"\n")[:-1][:400] if ln.strip()]
    if len(lines) < MIN_LINES:
        return None
    labels = [m.group(0) if (m := _LABEL.match(ln)) else None for ln in lines]
    first = labels[0]
    if first is None or sum(label == first for label in labels) < LABEL_SHARE * len(lines):
        return None
    return None if _other_label(first).search(b"\n" + head) else first


def _other_label(label: bytes) -> re.Pattern:
    """A line starting with another label of the kind of `label` (another srun task, host or pod), after a
    line break."""
    kind = next(k for k in _KINDS if re.fullmatch(k, label))
    same = rb" {0,6}" + label.strip(b" :") + rb": " if kind == _KINDS[0] else re.escape(label)  # srun pads tasks
    return re.compile(rb"\n(?!" + same + rb")" + kind)


def doubled_breaks(head: bytes) -> bool:
    """True when every run of line breaks in `head` (its last, possibly cut, run aside) holds an even number of
    them, MIN_LINES runs or more: each line followed by one blank line."""
    runs = [len(_BREAK.findall(m.group(0))) for m in _BREAKS.finditer(head.rstrip(b"\r\n"))]
    return len(runs) >= MIN_LINES and all(n % 2 == 0 for n in runs)


class Unwrap:
    """Called on each chunk of a text stream in order: the chunk without terminal escapes, with doubled line
    breaks made single and without the one collector label, as far as `head` shows them. An escape, the breaks at
    the end, or (with a label) a line cut by a chunk's end wait for the next chunk; `final` flushes them."""

    def __init__(self, head: bytes, path: object = None) -> None:
        head = strip_escapes(head)
        self.doubled = doubled_breaks(head)
        self.label = collector_label(_BREAK_PAIR.sub(b"\n", head) if self.doubled else head)
        self.other = _other_label(self.label) if self.label is not None else None
        if self.label is None and (indent := (INDENT.get() or {}).get(str(path))):
            self.label = indent  # taken off like a label, with no other label to look out for
        self.stderr = str(path) in (STDERR.get() or ())
        self.carry = b""

    def tail(self, data: bytes) -> None:
        """The file's last bytes, where known before the stream reaches them: another task, host or pod there
        (`kubectl logs --prefix` prints pod after pod; task 0 alone may print a long setup) — no label is
        taken off."""
        if self.other is not None and self.other.search(strip_escapes(data)):
            self.label = None

    def __call__(self, data: bytes, final: bool) -> bytes:
        if self.carry:
            data, self.carry = self.carry + data, b""
        if b"\x1b" in data:
            cut = data.rfind(b"\x1b", max(0, len(data) - 600))
            if not final and cut >= 0 and _ESCAPE_CUT.fullmatch(data, cut):
                data, self.carry = data[:cut], data[cut:]
            data = strip_escapes(data)
        if self.doubled:  # a pair cut by the chunk's end waits: the breaks at the end go with the next chunk
            end = len(data) if final else len(data.rstrip(b"\r\n"))
            data, self.carry = data[:end], data[end:] + self.carry
            data = _BREAK_PAIR.sub(b"\n", data)
        if (label := self.label) is not None:
            end = len(data) if final else data.rfind(b"\n") + 1
            data, self.carry = data[:end], data[end:] + self.carry
            rest = b""
            # another task, host or pod: the label is theirs from here
            if self.other is not None and (m := self.other.search(b"\n" + data)):
                data, rest, self.label = data[:m.start()], data[m.start():], None
            data = (b"\n" + data).replace(b"\n" + label, b"\n")[1:]
            if self.other is None and b">" in label:  # a quote's lines of quote marks alone are its blank lines
                data = _QUOTE_BLANK_B.sub(b"", data)
            data += rest
        if self.stderr:  # whole lines only; a record the chunk's end may cut (its source line, its advice) waits
            end = len(data) if final else data.rfind(b"\n") + 1
            starts, line = [], end - 1  # the starts of the last complete lines, the last first
            while not final and end and len(starts) < _RECORD_LINES and line >= 0:
                line = data.rfind(b"\n", 0, line)
                starts.append(line + 1)
            for start in reversed(starts):  # the earliest record that reaches the chunk's end waits whole
                if (m := _STDERR_RECORD.match(data, start, end)) and m.end() == end:
                    end = start
                    break
            data, self.carry = drop_stderr(data[:end]), data[end:] + self.carry
        return data
