"""What iolens reads is a regular file: a FIFO would block the command until something writes to it, and a
device (/dev/zero, /dev/urandom) never ends (read whole, it fills the memory). Told from `stat`, which neither
opens nor blocks."""
from __future__ import annotations

import os
import stat

from ..errors import LogError

SPECIAL = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
           (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_kind(path) -> str | None:
    """What `path` is when it is none of a file, a folder or a missing path (links followed); else None."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, a link loop, no permission: the open that follows says why
        return None
    return next((name for is_kind, name in SPECIAL if is_kind(mode)), None)


def refuse_special(path, what: str = "a log file") -> None:
    """LogError (one line, naming `path`) when `path` is a FIFO, a device or a socket."""
    kind = special_kind(path)
    if kind:
        raise LogError(f"is {kind}, not {what} (iolens reads regular files)", os.fsdecode(path))
