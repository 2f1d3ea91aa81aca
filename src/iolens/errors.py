"""Errors a user can act on: each carries one line that names the problem."""


class LogError(Exception):
    """The file cannot be read as a Darshan log (not a log, truncated, corrupt, too new)."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.message = message
        self.path = path

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class NoTraceError(LogError):
    """The log holds no DXT trace where one is required."""


class MissingDependencyError(LogError):
    """An optional dependency a command needs is not installed: the message names the pip extra."""


def printable(text: str) -> str:
    """`text` as a table, a page or a JSON file can hold it: the bytes of a file name that are not UTF-8 (which
    Python keeps as lone surrogates, os.fsdecode) shown as U+FFFD. The file itself is still opened by its real
    name; only what is shown and stored changes."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte
        return text.encode("utf-8", "replace").decode("utf-8")
