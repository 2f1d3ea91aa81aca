"""`iolens tune`: search a command's runtime knobs, guided by a performance model fitted to the runs.

    space.py   the knobs, their values, how each reaches the run (ROMIO_HINTS, environment, placeholders)
    model.py   the empirical model m(x) = Σ β φ(x), least squares, prediction over the grid
    study.py   Optuna's study in the study folder (journal storage: a killed tune resumes)
    trial.py   one run, exactly as `iolens run` does it, measured from its own log
    loop.py    baseline → run, measure, refit → confirmation
    result.py  compare's verdict, the knobs that mattered, the study folder's files

`study(command, options, events)` runs a study with its page (tune.html in the study folder, the views'); the
package called, `iolens.tune(command, **options)`, is `study` with `Options(**options)`.
"""
import dataclasses
import sys
import types

from ..views.html.tune import write_tune_page
from .loop import Events, Options, TuneError, tune

__all__ = ["Events", "Options", "TuneError", "study", "tune"]


def study(command, options: Options | None = None, events: Events | None = None, **option_values) -> dict:
    """Tune `command`'s runtime knobs: options as `Options` (or its fields as keywords), `events` for progress
    (their `page` writer, or the HTML study page). Returns what `iolens tune --json` prints."""
    options = options or Options(**option_values)
    events = events or Events()
    if events.page is None:
        events = dataclasses.replace(events, page=write_tune_page)
    return tune(list(command), options, events)


class _Callable(types.ModuleType):
    """`iolens.tune(command, **options)`: the package called is `study(command, **options)`."""

    def __call__(self, command, **options) -> dict:
        return study(command, **options)


sys.modules[__name__].__class__ = _Callable
