"""Lazy re-exports for a package's facade: a name is imported from its home module on first use, so that
`import playbook` stays light (no pandas, torch or NVML until something needs them)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def exports(package: str, table: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(__getattr__, __dir__) for `package`. table: {name: "module"} exports module.name, {name: "module:"} exports
    the module itself under `name`."""

    def getattr_(name: str) -> Any:
        home = table.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, _, attr = home.partition(":")
        value = importlib.import_module(module_name)
        if not home.endswith(":"):
            value = getattr(value, attr or name)
        return value

    def dir_() -> list[str]:
        return sorted(table)

    return getattr_, dir_
