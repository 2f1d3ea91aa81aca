"""The optional dependencies, imported in this one place: a missing one is one line naming the extra to install.

`pip install iolens` brings what info, files, export, report, diagnose, compare, run and jobs need; the heavy
parts come with extras (pyproject.toml's [project.optional-dependencies], which must list the same packages):

    require("fleet", "iolens fleet")           # before any work: every package of the extra is there
    deltalake = load("fleet", "deltalake")      # where the package is used
"""
from __future__ import annotations

import importlib
import importlib.util

from .errors import LogError

# extra -> {module imported: distribution pip installs}
EXTRAS: dict[str, dict[str, str]] = {
    "fleet": {"dask": "dask", "distributed": "distributed", "deltalake": "deltalake", "sklearn": "scikit-learn"},
    "tune": {"optuna": "optuna"},
    "sql": {"duckdb": "duckdb"},
    "mcp": {"mcp": "mcp", "duckdb": "duckdb"},
}


class MissingExtra(LogError):
    """An optional dependency is not installed: says which extra brings it (the CLI prints it, exit 2)."""

    def __init__(self, extra: str, missing: list, what: str = ""):
        self.extra, self.missing = extra, list(missing)
        needs = f"{what} needs" if what else "this needs"
        super().__init__(f"{needs} the '{extra}' extra ({', '.join(self.missing)} not installed): "
                         f"pip install 'iolens[{extra}]'")


def missing(extra: str) -> list:
    """The distributions of EXTRA that cannot be found (without importing them)."""
    return [dist for module, dist in EXTRAS[extra].items() if not _found(module)]


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install, or a module blocked in sys.modules: not usable
        return False


def available(extra: str) -> bool:
    return not missing(extra)


def require(extra: str, what: str = "") -> None:
    """Raise MissingExtra unless every package of EXTRA is installed (call it before a command does any work)."""
    absent = missing(extra)
    if absent:
        raise MissingExtra(extra, absent, what)


def load(extra: str, module: str):
    """`import MODULE` (a package of EXTRA, or one of its submodules), or MissingExtra naming EXTRA."""
    top = module.partition(".")[0]
    if top not in EXTRAS[extra]:
        raise ValueError(f"{top} is not a package of the {extra!r} extra")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:  # the package, or one of its own dependencies: the extra brings both
        name = exc.name or top
        raise MissingExtra(extra, [EXTRAS[extra].get(name.partition(".")[0], name)]) from None
