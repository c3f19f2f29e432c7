"""The `playbook` command line: one subcommand per module in playbook/commands/.

Each command module defines HELP (one line), EXAMPLES (text shown under --help), `add_arguments(parser)` and
`run(args) -> int`. Modules are imported only when their command runs (or for --help), so `playbook --help`
stays fast and never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from playbook.core.errors import PlaybookError
from playbook.core.terminal import visible

# name -> module; the order is the order shown in --help.
COMMANDS: dict[str, str] = {
    "info": "playbook.commands.info",
    "diagnose": "playbook.commands.diagnose",
    "record": "playbook.commands.record",
    "watch": "playbook.commands.watch",
    "report": "playbook.commands.report",
    "compare": "playbook.commands.compare",
    "labs": "playbook.commands.labs",
}

EPILOG = """examples:
  playbook info data/samples                       what the embedded sample holds
  playbook diagnose logs/node*.csv steps.jsonl     name the cause of an oscillation
  playbook record --out runs/r1 -- torchrun --standalone --nproc-per-node 2 train.py
  playbook watch --for 60s                         live dashboard; prints the diagnosis after a minute
  playbook report                                  batch report on the embedded sample
  playbook compare runs/good runs/bad              why a run that used to sit at 100% is spotty

Run `playbook COMMAND --help` for a command's options and an example."""


def _load(name: str):
    try:
        return importlib.import_module(COMMANDS[name])
    except ModuleNotFoundError as exc:
        if exc.name == COMMANDS[name]:
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (imports every available command module)."""
    parser = argparse.ArgumentParser(
        prog="playbook",
        description="The GPU utilization playbook: find why GPU utilization oscillates, and fix it.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from playbook import __version__

    parser.add_argument("--version", action="version", version=f"playbook {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = _load(name)
        if module is None:
            continue
        p = sub.add_parser(name, help=module.HELP, description=module.HELP,
                           epilog="example:\n" + module.EXAMPLES.rstrip(),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse, run, and turn PlaybookError into a one-line message and exit status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):  # a command is required: usage on stderr, argparse's status for misuse
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args._run(args) or 0)
    except PlaybookError as exc:
        return _fail(args.command, str(exc))
    except KeyboardInterrupt:
        print(f"playbook {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `playbook info ... | head`: the reader of our output left
        sys.stderr.close()
        return 0
    except OSError as exc:  # the file system said no: a path through a file, permissions, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(args.command, f"{where}{exc.strerror or exc}")
    except MemoryError:
        return _fail(args.command, "out of memory reading the inputs (read fewer or smaller files at once)")
    except Exception:  # a bug in the playbook, not in the input: show it, and ask for a report
        import traceback

        traceback.print_exc()
        print(f"playbook {args.command}: internal error — this is a bug in the playbook, not in your input; please "
              f"report it with the command line and the traceback above (playbook {_version()})", file=sys.stderr)
        return 70


def _fail(command: str, message: str) -> int:
    """One line on stderr (a multi-line message is folded onto one), exit status 2."""
    print(visible(f"playbook {command}: error: " + " ".join(message.split("\n"))), file=sys.stderr)
    return 2


def _version() -> str:
    from playbook import __version__

    return __version__
