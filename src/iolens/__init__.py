"""iolens: turn Darshan/DXT HPC I/O traces into answers."""
from .errors import LogError, NoTraceError
from .model import Log, read
from .version import __version__

__all__ = ["Log", "LogError", "NoTraceError", "compare", "read", "tune", "__version__"]


def compare(*logs, **options) -> dict:
    """Compare runs (paths or `Log`s), the first being the baseline: what `iolens compare --json` prints."""
    from .analysis.compare import compare as _compare

    return _compare(*logs, **options)


def __getattr__(name):
    # `iolens.tune` is the tune package, callable: iolens.tune(["mpiexec", "-n", "4", "./app"], budget=12)
    if name == "tune":
        import importlib

        from .views.html.tune import write_tune_page

        module = importlib.import_module(".tune", __name__)
        module.PAGE = write_tune_page
        return module
    raise AttributeError(f"module 'iolens' has no attribute {name!r}")
