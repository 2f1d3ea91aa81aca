"""`iolens tune`: search a command's runtime knobs, guided by a performance model fitted to the runs.

    space.py   the knobs, their values, how each reaches the run (ROMIO_HINTS, environment, placeholders)
    model.py   the empirical model m(x) = Σ β φ(x), least squares, prediction over the grid
    study.py   Optuna's study in the study folder (journal storage: a killed tune resumes)
    trial.py   one run, exactly as `iolens run` does it, measured from its own log
    loop.py    baseline → run, measure, refit → confirmation
    result.py  compare's verdict, the knobs that mattered, the study folder's files
"""
import importlib
import sys
import types

from .loop import Events, Options, TuneError, tune

__all__ = ["Events", "Options", "TuneError", "tune"]
PAGE = None  # the study page's writer: set by the `iolens` package (views are not imported from here)


class _Callable(types.ModuleType):
    """`iolens.tune(command, **options)`: the package called is `tune(command, Options(**options))` with
    the study page written, the `iolens tune --json` structure."""

    def __call__(self, command, **options) -> dict:
        if PAGE is None:  # imported as `iolens.tune` before the iolens package wired the page in: let it
            importlib.import_module(__name__.rsplit(".", 1)[0]).__getattr__("tune")
        return tune(list(command), Options(**options), Events(page=PAGE))


sys.modules[__name__].__class__ = _Callable
