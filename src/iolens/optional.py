"""The optional dependencies, loaded where first needed and only here: `require("dask")` imports a module of
an extra or says in one line which extra brings it (`iolens: error: ...`, exit status 2 on the command line).

    pip install 'iolens[fleet]'   dask, distributed, deltalake, scikit-learn (`iolens fleet`)
    pip install 'iolens[tune]'    optuna (`iolens tune`)
    pip install 'iolens[sql]'     duckdb (SQL over the tables)
    pip install 'iolens[mcp]'     mcp (the server for agents)
"""
from __future__ import annotations

import importlib

from .errors import MissingDependencyError

# top-level module -> (the extra that installs it, its name on PyPI)
EXTRAS = {"dask": ("fleet", "dask"), "distributed": ("fleet", "distributed"), "deltalake": ("fleet", "deltalake"),
          "sklearn": ("fleet", "scikit-learn"), "optuna": ("tune", "optuna"), "duckdb": ("sql", "duckdb"),
          "mcp": ("mcp", "mcp")}


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
