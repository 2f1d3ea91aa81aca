"""The optional dependencies, imported in this one place: a missing one is one line naming the extra to install.

`pip install iolens` brings what info, files, export, report, diagnose, compare, run and jobs need; the heavy
parts come with extras (pyproject.toml's [project.optional-dependencies], which must list the same packages):

    pip install 'iolens[fleet]'   dask, distributed, deltalake, scikit-learn (`iolens fleet`)
    pip install 'iolens[tune]'    optuna (`iolens tune`)
    pip install 'iolens[sql]'     duckdb (SQL over the tables)
    pip install 'iolens[mcp]'     mcp, duckdb (the server for agents)

    require_extra("fleet", "iolens fleet build")   # before a command does any work: every package is there
    deltalake = require("deltalake")               # where a package is used
"""
from __future__ import annotations

import importlib
import importlib.util

from .errors import MissingDependencyError

# top-level module -> (the extra that installs it, its name on PyPI)
EXTRAS = {"dask": ("fleet", "dask"), "distributed": ("fleet", "distributed"), "deltalake": ("fleet", "deltalake"),
          "sklearn": ("fleet", "scikit-learn"), "optuna": ("tune", "optuna"), "duckdb": ("sql", "duckdb"),
          "mcp": ("mcp", "mcp")}
# an extra may also bring another extra's package (the MCP server queries with DuckDB)
ALSO = {"mcp": ("duckdb",)}


def require(module: str):
    """The module `module` (dotted names too: "sklearn.cluster"), imported; MissingDependencyError naming the
    pip extra when its package is not installed. An import error from inside an installed package is
    raised as it is (a broken install is not a missing one)."""
    top = module.split(".")[0]
    if top not in EXTRAS:
        raise ValueError(f"{top} is not an optional dependency of iolens")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != top:
            raise
        extra, package = EXTRAS[top]
        raise MissingDependencyError(f"{package} is not installed (pip install 'iolens[{extra}]')") from None


def modules_of(extra: str) -> list:
    """The top-level modules the extra installs."""
    return [m for m, (e, _) in EXTRAS.items() if e == extra] + list(ALSO.get(extra, ()))


def missing(extra: str) -> list:
    """The packages (PyPI names) of EXTRA that cannot be found, without importing them."""
    return [EXTRAS[m][1] for m in modules_of(extra) if not _found(m)]


def require_extra(extra: str, what: str) -> None:
    """One line, before WHAT does any work, when a package of EXTRA is not installed:
    `WHAT needs the 'EXTRA' extra (PACKAGES not installed): pip install 'iolens[EXTRA]'`."""
    absent = missing(extra)
    if absent:
        raise MissingDependencyError(f"{what} needs the '{extra}' extra ({', '.join(absent)} not installed): "
                                     f"pip install 'iolens[{extra}]'")


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install, or a module blocked in sys.modules: not usable
        return False
