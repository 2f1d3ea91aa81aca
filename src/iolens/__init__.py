"""iolens: turn Darshan/DXT HPC I/O traces into answers.

    log = iolens.open("run.darshan")     # any trace under the Log contract (iolens.TraceLog)
    iolens.diagnose(log); iolens.report(log, "run.html"); iolens.compare("a.darshan", "b.darshan")

The functions are the pipeline's (iolens/pipeline.py); `iolens.tune(command, **options)` runs a study and is
also the tune package (`iolens.tune.Options`, `iolens.tune.tune`)."""
import types

from . import pipeline
from . import tune as _tune_package
from .errors import LogError, NoTraceError
from .model import Log, RecorderTrace, TraceLog, read
from .pipeline import (as_thresholds, compare, describe_jobs, diagnose, diagnose_json, export, fleet_build,
                       fleet_report, open, report, summary)
from .version import __version__

__all__ = ["Log", "LogError", "NoTraceError", "RecorderTrace", "TraceLog", "__version__", "as_thresholds",
           "compare", "describe_jobs", "diagnose", "diagnose_json", "export", "fleet_build", "fleet_report", "open",
           "read", "report", "summary", "tune"]


class _TunePackage(types.ModuleType):
    """The tune package, callable: `iolens.tune(["mpiexec", "-n", "4", "./app"], budget=12)` is the
    pipeline's `tune` (the study page written)."""

    def __call__(self, command, **options) -> dict:
        return pipeline.tune(command, **options)


_tune_package.__class__ = _TunePackage
tune = _tune_package
