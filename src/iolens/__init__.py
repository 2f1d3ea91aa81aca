"""iolens: turn Darshan/DXT HPC I/O traces into answers."""
from .errors import LogError, NoTraceError
from .model import Log, read

__version__ = "0.1.0"
__all__ = ["Log", "LogError", "NoTraceError", "read", "__version__"]
