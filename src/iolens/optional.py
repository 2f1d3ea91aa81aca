"""Optional dependencies, imported only by the subcommands that need them, through one place.

    duckdb = require("duckdb")   # LogError naming `pip install 'iolens[sql]'` when it is missing
"""
from __future__ import annotations

import importlib

from .errors import LogError

# module -> the pip extra that installs it, and what else it needs
EXTRAS = {"duckdb": ("sql", ""), "mcp": ("mcp", "; the MCP SDK needs Python 3.10 or newer")}


def require(name: str):
    """The module `name`, imported; a one-line LogError naming the extra that installs it when it cannot be."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        extra, needs = EXTRAS.get(name.split(".")[0], (None, ""))
        hint = (f"pip install 'iolens[{extra}]'" if extra else f"pip install {name.split('.')[0]}") + needs
        raise LogError(f"this needs the Python package {name.split('.')[0]!r}, which is not installed "
                       f"({hint}): {exc}") from None
