"""iolens: turn Darshan/DXT HPC I/O traces into answers.

    log = iolens.open("run.darshan")     # any trace under the Log contract (iolens.TraceLog)
    iolens.diagnose(log); iolens.report(log, "run.html"); iolens.compare("a.darshan", "b.darshan")

The functions are the pipeline's (iolens/pipeline/: `pipeline.API` names them), loaded on first use so that
`import iolens` and each command load only the stages they run; `iolens.tune(command, **options)` runs a study
and is also the tune package (`iolens.tune.Options`, `iolens.tune.study`)."""
import importlib

from .errors import LogError, MissingDependencyError, NoTraceError
from .pipeline import API
from .version import __version__

# (`open` is left out of `from iolens import *`: it would hide the builtin; `iolens.open` is the name)
# the model (numpy, polars: seconds on a busy machine) is loaded on first use too, so that the `iolens` command
# enters its own main, which turns Ctrl-C into one line, before anything heavy is imported
MODEL = ("DFTracerTrace", "Log", "RecorderTrace", "TraceLog", "read")
__all__ = ["DFTracerTrace", "Log", "LogError", "MissingDependencyError", "NoTraceError", "RecorderTrace", "TraceLog", "__version__",
           "read", "tune", *(name for name in API if name != "open")]


def __getattr__(name: str):
    # the one place the face loads lazily: a pipeline stage on first use of one of its functions, the tune package
    if name in MODEL:
        return getattr(importlib.import_module(".model", __name__), name)
    if name in API:
        return getattr(importlib.import_module(f".pipeline.{API[name]}", __name__), name)
    if name == "tune":
        return importlib.import_module(".tune", __name__)
    raise AttributeError(f"module 'iolens' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
