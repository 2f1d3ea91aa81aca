"""iolens's version, readable by every layer without importing the package root.

The one source of truth is `version` in native/Cargo.toml: maturin writes it into the installed package's
metadata (pyproject.toml declares the version dynamic), and this reads it back from there.
"""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("iolens")
except PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"
