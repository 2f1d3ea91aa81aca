"""Files written whole or not at all. Every output iolens writes (a page, a table, a trace, a query's answer, a
tune result) goes to a hidden temporary name beside its final one and is renamed into place once complete, so a
command killed meanwhile leaves at most that hidden file, never half a file under the final name."""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Iterator

from .errors import LogError


def umask() -> int:
    """The process' umask (read by setting it, then set back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def whole_file(path, mode: int = 0o666, sync: bool = False, replace: bool = True) -> Iterator[Path]:
    """A temporary path beside `path` to write to; on a clean exit it becomes `path` (replacing any file there;
    without `replace`, a file that appeared there meanwhile is a LogError and is kept), with the permissions a
    file opened for writing would have (`mode` less the umask); on an error or an interruption it is removed.
    `sync`: flushed to disk before the rename. A path that cannot be written (no such folder, no permission, a
    full disk) is a LogError naming it."""
    path = Path(path)
    if path.is_dir():
        raise LogError("is a folder: give a file name", str(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    except OSError as exc:
        raise LogError(f"cannot write here ({exc.strerror or exc})", str(path)) from None
    os.close(fd)
    try:
        yield Path(tmp)
        if sync:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode & ~umask())
        _publish(tmp, path, replace)
    except BaseException as exc:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise LogError(f"cannot write ({exc.strerror or exc})", str(path)) from None
        raise


def _publish(tmp: str, path: Path, replace: bool) -> None:
    if replace:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)  # fails if `path` appeared meanwhile: an existing file is never replaced
    except FileExistsError:
        raise LogError("exists (give --force to replace it)", str(path)) from None
    except OSError:  # a file system without hard links
        if path.exists():
            raise LogError("exists (give --force to replace it)", str(path)) from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def write_text(path, text: str, mode: int = 0o666) -> None:
    """`text` (UTF-8) to `path`, whole or not at all."""
    with whole_file(path, mode) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes(path, data: bytes, mode: int = 0o666) -> None:
    """`data` to `path`, whole or not at all."""
    with whole_file(path, mode) as tmp:
        tmp.write_bytes(data)
