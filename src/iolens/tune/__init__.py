"""`iolens tune`: search a command's runtime knobs, guided by a performance model fitted to the runs.

    space.py   the knobs, their values, how each reaches the run (ROMIO_HINTS, environment, placeholders)
    model.py   the empirical model m(x) = Σ β φ(x), least squares, prediction over the grid
    study.py   Optuna's study in the study folder (journal storage: a killed tune resumes)
    trial.py   one run, exactly as `iolens run` does it, measured from its own log
    loop.py    baseline → run, measure, refit → confirmation
    result.py  compare's verdict, the knobs that mattered, the study folder's files

`tune(command, options, events)` writes the study page through `events.page` when the caller gives one (tune
sits below the views): `iolens.tune(command, **options)` (the pipeline) gives the HTML page's writer.
"""
from .loop import Events, Options, TuneError, tune

__all__ = ["Events", "Options", "TuneError", "tune"]
