"""iolens: turn Darshan/DXT HPC I/O traces into answers."""
from .errors import LogError, NoTraceError
from .model import Log, read
from .version import __version__

__all__ = ["Log", "LogError", "NoTraceError", "compare", "read", "__version__"]


def compare(*logs, **options) -> dict:
    """Compare runs (paths or `Log`s), the first being the baseline: what `iolens compare --json` prints."""
    from .analysis.compare import compare as _compare

    return _compare(*logs, **options)
