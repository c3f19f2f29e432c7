"""The project's own exceptions. Anything a user can trigger with bad input raises one of these."""


class PlaybookError(Exception):
    """Base class: the CLI prints its message as one line and exits 2."""


class InputError(PlaybookError):
    """An input file is unreadable or is not telemetry; the message names the file (and line)."""


class UnknownFormatError(InputError):
    """No reader recognises the content of a file."""


class ProbeError(PlaybookError):
    """A live probe could not start (never raised from inside a running probe)."""


class WorkloadError(PlaybookError):
    """A lab workload was given impossible settings."""
