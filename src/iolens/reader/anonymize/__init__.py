"""Anonymised Darshan logs: the same log, in its own format, with nothing that identifies the user.

    tokens = Tokens(Key.from_file("site.key"))
    report = write_anonymized("alice_app_id42-7_1-2-3-4_1.darshan", "out/", tokens)

Names (one token per path component), the command line, mount points, host names, uid, job id and the job
metadata Darshan does not write itself are replaced by keyed tokens (`tokens.py`); record ids are recomputed
from the new names with Darshan's own hash; every counter, DXT segment and heatmap bin keeps its bytes.
See docs/anonymize.md.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from ...errors import LogError
from ..log import _parse, log_bytes, read_job_only
from ..recover import PARTIAL_SUFFIX
from ..writer import assemble, write_atomically
from .log import Anonymized, anonymize_data, output_name
from .report import Report
from .tokens import Key, Tokens, key_beside, new_key_file

NAME_SAYS = re.compile(r" \(its name says [^)]*\)")

__all__ = ["Anonymized", "Key", "Report", "Tokens", "anonymize_file", "anonymized_name", "key_beside", "new_key_file",
           "output_name", "read_anonymized", "write_anonymized"]


def anonymize_file(path, tokens: Tokens, compression: Optional[str] = None) -> Anonymized:
    """The anonymised log of the file at `path`: its name, report and (offset, bytes) pieces, compressed as
    they are consumed (the report is whole once they are); LogError (one line, naming `path`) when it is
    not a Darshan log iolens can read."""
    path = str(path)
    data = log_bytes(path, "is a directory, not a Darshan log")
    try:
        return anonymize_data(path, data, tokens, compression)
    except LogError as exc:
        exc.path = exc.path or path
        exc.message = NAME_SAYS.sub("", exc.message)  # what the original's file name says stays out of it
        exc.args = (exc.message,)
        raise
    except (ValueError, OverflowError, MemoryError, IndexError, UnicodeError) as exc:
        raise LogError(f"corrupt log ({type(exc).__name__}: {exc})", path) from None


def write_anonymized(path, out, tokens: Tokens, force: bool = False) -> Report:
    """Anonymise the log at `path` into `out` (a file name, or an existing folder: the log's anonymised name
    in it), atomically; an existing file is replaced only with `force`. The report's `output` is the path
    written."""
    done = anonymize_file(path, tokens)
    target = Path(out) / done.name if Path(out).is_dir() else Path(out)
    write_atomically(target, done.pieces, force=force)
    done.report.output = str(target)
    return done.report


def anonymized_name(path, tokens: Tokens) -> str:
    """The anonymised log's file name, from the log's name and command line (only its job region is read);
    LogError as `anonymize_file`."""
    try:
        command = read_job_only(str(path)).job.exe.encode()
    except LogError:
        if not (str(path).endswith(PARTIAL_SUFFIX) and os.path.isfile(path) and os.path.getsize(path) == 0):
            raise
        command = None  # an empty unfinished log: only its file name speaks
    return output_name(str(path), tokens, command)


def read_anonymized(path, tokens: Tokens, regions=None, label: Optional[str] = None):
    """(RawLog, Report) of the anonymised log of `path`, never written to disk: what iolens reads of the file
    `write_anonymized` writes. The RawLog's path is `label`, by default the anonymised log's token path."""
    done = anonymize_file(path, tokens, compression="none")
    if label is None:
        folder = os.path.dirname(os.path.abspath(str(path)))
        label = tokens.path(os.fsencode(folder)).decode() + "/" + done.name
    try:
        raw = _parse(label, assemble(done.pieces), None, regions)
    except LogError as exc:
        exc.path = exc.path or label
        raise
    return raw, done.report
