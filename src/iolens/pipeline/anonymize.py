"""Anonymising: Darshan logs and DFTracer trace files written again, in their own format, with keyed tokens in
place of everything that identifies the user (`iolens anonymize`; the rewriting itself is reader/anonymize/), and
the anonymised copies `iolens export --anonymize` reads. docs/anonymize.md."""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LogError
from ..reader.anonymize import Key, Report, Tokens, anonymize_file, anonymized_name, key_beside, new_key_file
from ..reader.anonymize.dftracer import anonymize_trace, trace_name
from ..reader.dftracer import TRACE_SUFFIXES
from ..reader.folders import LOG_SUFFIXES, count_other_traces, other_traces_text, walk
from ..reader.recorder import is_recorder_trace
from ..reader.writer import write_atomically

__all__ = ["Anonymization", "anonymize", "anonymized_copies", "find_logs", "key_tokens"]

REWRITES = "anonymize rewrites Darshan logs and DFTracer traces"


@dataclass
class Anonymization:
    """What `anonymize` did: the key, each log written (its input and report, `report.output` the file), and
    the one-line errors of the logs it could not."""
    key_file: str
    new_key: bool
    tokens: Tokens
    written: list = field(default_factory=list)  # [(input path, Report)]
    errors: list = field(default_factory=list)  # [LogError]
    skipped: Counter = field(default_factory=Counter)  # other tracers' traces in the folders: kind -> how many

    def skipped_note(self) -> str | None:
        """One line on the traces left out, or None."""
        held = other_traces_text(self.skipped)
        return f"left out, not anonymised: {held} ({REWRITES})" if held else None

    @property
    def failed(self) -> int:
        return len(self.errors)

    def to_dict(self) -> dict:
        """What `iolens anonymize --json` prints and `--report` writes: no original value."""
        return {"key_file": str(self.key_file), "new_key": self.new_key,
                "logs": [report.to_dict() for _, report in self.written], "failed": self.failed,
                "skipped": {kind: n for kind, n in self.skipped.items() if n}}

    def token_map(self) -> dict:
        """Every original and its token, by kind, and each log's input and output: private, like the key."""
        def text(value):
            return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else value

        kinds = {kind: {str(text(k)): text(v) for k, v in values.items()}
                 for kind, values in self.tokens.originals.items()}
        logs = [{"input": path, "output": report.output} for path, report in self.written]
        return {"logs": logs, "tokens": kinds}

    def write_report(self, path) -> None:
        write_atomically(path, [(0, (json.dumps(self.to_dict(), indent=2) + "\n").encode())], force=True)

    def write_map(self, path) -> None:
        write_atomically(path, [(0, (json.dumps(self.token_map(), indent=2) + "\n").encode())], force=True,
                         mode=0o600)


def anonymize(logs, out, key_file=None, *, keep_exe_name: bool = False, force: bool = False, on_error=None,
              on_new_key=None, progress=None) -> Anonymization:
    """Write each Darshan log of `logs` (files, or folders of logs keeping their shape) again with keyed tokens:
    one log file to `out` itself (unless `out` is a folder or ends in /), else each under its anonymised name
    into the folder `out` (folders as tokens). Tokens are keyed by `key_file`, or by a new key written beside
    `out` (`on_new_key(path)` is called then). Every output name is checked before anything is written (two
    logs may not share one; an existing file is replaced only with `force`). A log that cannot be read is
    left out, its LogError kept (`errors`) and passed to `on_error`; `progress(done, total)` after each log."""
    logs = [logs] if isinstance(logs, (str, os.PathLike)) else list(logs)
    skipped = Counter()
    found = find_logs(logs, skipped)
    out_text = os.fspath(out)
    single = len(found) == 1 and not os.path.isdir(logs[0]) and not os.path.isdir(out_text) and not out_text.endswith(
        ("/", os.sep))
    out = Path(out_text)
    if not single and out.exists() and not out.is_dir():
        raise LogError("exists and is not a folder (several logs go into a folder)", str(out))
    made = _first_missing(key_beside(out).parent) if key_file is None else None
    tokens, key_path, new_key = key_tokens(out, key_file, keep_exe_name)
    done = Anonymization(str(key_path), new_key, tokens, skipped=skipped)
    try:
        _write(done, found, out, single, force, on_error, progress)
    finally:
        if new_key and not done.written:  # nothing was written with it: a new key would only be a stray secret
            Path(key_path).unlink(missing_ok=True)
            _remove_empty(Path(key_path).parent, made)
    if new_key and done.written and on_new_key is not None:
        on_new_key(key_path)
    return done


def _write(done: Anonymization, found: list, out: Path, single: bool, force: bool, on_error, progress) -> None:
    tokens = done.tokens

    def failed(exc: LogError) -> None:
        done.errors.append(exc)
        if on_error is not None:
            on_error(exc)

    plan = _targets(found, out, single, tokens, force, failed)
    if progress is not None:
        progress(0, len(plan))
    for n, (path, target) in enumerate(plan, 1):
        try:
            report = anonymize_log(path, target, tokens, force)
        except LogError as exc:
            failed(exc)
        else:
            done.written.append((str(path), report))
        if progress is not None:
            progress(n, len(plan))


def _first_missing(folder: Path) -> Path | None:
    """The outermost folder of `folder`'s ancestry (itself included) that does not exist yet, or None."""
    missing = None
    for f in (folder, *folder.parents):
        if f.exists():
            break
        missing = f
    return missing


def _remove_empty(folder: Path, made: Path | None) -> None:
    """Remove the folders this run made for its output, from `folder` up to `made`, where they stayed empty."""
    if made is None:
        return
    for f in (folder, *folder.parents):
        try:
            f.rmdir()
        except OSError:  # not empty (or gone): leave it and what holds it
            return
        if f == made:
            return


def key_tokens(output, key_file=None, keep_exe_name: bool = False) -> tuple:
    """(Tokens, key path, new?): the tokens of `key_file`, or of a new owner-only key written beside `output`.
    A key already beside the output is never replaced: LogError naming it, to be given as `key_file`."""
    if key_file is not None:
        return Tokens(Key.from_file(key_file), keep_exe_name), key_file, False
    path = key_beside(output)
    if path.exists():
        raise LogError(f"a key is already there (from an earlier run?): pass --key-file {path} to use it, "
                       "or remove it", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    return Tokens(new_key_file(path), keep_exe_name), path, True


def anonymize_log(path, target: Path, tokens: Tokens, force: bool = False) -> Report:
    """Anonymise the log (or DFTracer trace file) at `path` into the file `target` (atomically; its folder
    made); its report."""
    done = anonymized(path, tokens)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, done.pieces, force=force)
    done.report.output = str(target)
    return done.report


def anonymized_copies(paths, folder: Path, tokens: Tokens) -> list:
    """Anonymised copies of the logs (files, or folders of logs keeping their shape) in `folder`: the paths to
    read in place of `paths`, one each. What `export --anonymize` reads; LogError on a log that cannot be read."""
    out = []
    for arg in map(str, paths):
        refuse_other_traces(arg, "--anonymize")
        top = folder / tokens.component(os.path.basename(os.path.normpath(arg)).encode()).decode() \
            if os.path.isdir(arg) else folder
        for path, rel in find_logs([arg]):
            done = anonymized(path, tokens)
            target = (top / tokens.path(rel.encode()).decode() if rel else top) / done.name
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, done.pieces)
        out.append(str(top) if os.path.isdir(arg) else str(target))
    return out


def anonymized(path, tokens: Tokens):
    """The anonymised copy of one Darshan log or DFTracer trace file (told by its name)."""
    return anonymize_trace(path, tokens) if str(path).endswith(TRACE_SUFFIXES) else anonymize_file(path, tokens)


def output_name(path, tokens: Tokens) -> str:
    return trace_name(path, tokens) if str(path).endswith(TRACE_SUFFIXES) else anonymized_name(path, tokens)


def refuse_other_traces(arg: str, what: str = "anonymize") -> None:
    """LogError when `arg` is a Recorder trace: anonymising rewrites Darshan logs and DFTracer traces."""
    if os.path.isdir(arg) and is_recorder_trace(arg):
        raise LogError(f"{what} rewrites Darshan logs and DFTracer traces; this is a Recorder trace", arg)


def find_logs(paths, skipped: Counter | None = None) -> list:
    """[(log path, folder under OUT relative to its argument)]: files as given, folders walked for Darshan logs
    and DFTracer trace files. Recorder traces met in the folders (left out) are counted in `skipped`."""
    found = []
    for arg in map(str, paths):
        refuse_other_traces(arg)
        if os.path.isdir(arg):
            inside, others = [], Counter()
            for root, _, files in walk(arg):
                rel = os.path.relpath(root, arg)
                inside += [(os.path.join(root, f), "" if rel == "." else rel) for f in files
                           if f.endswith(LOG_SUFFIXES + TRACE_SUFFIXES)]
                count_other_traces(files, others)
            others.pop("DFTracer trace files", None)  # anonymised with the logs
            if not inside:
                held = other_traces_text(others)
                raise LogError("no Darshan log (*.darshan, *.darshan_partial) or DFTracer trace file (*.pfw, "
                               "*.pfw.gz) in this folder" + (f" (it holds {held}: {REWRITES})" if held else ""), arg)
            found += inside
            if skipped is not None:
                skipped.update(others)
        elif os.path.exists(arg):
            found.append((arg, ""))
        else:
            raise LogError("no such file or folder", arg)
    return found


def _targets(found: list, out: Path, single: bool, tokens: Tokens, force: bool, failed) -> list:
    """[(log, output path)], every output name checked before anything is written: two logs may not share
    one, and an existing file is replaced only with `force`. A log whose job region cannot be read is passed
    to `failed` and left out."""
    if single:
        if out.exists() and not force:
            raise LogError("exists (give --force to replace it)", str(out))
        return [(found[0][0], out)]
    plan, seen = [], {}
    for path, rel in found:
        try:
            name = output_name(path, tokens)
        except LogError as exc:
            failed(exc)
            continue
        target = (out / tokens.path(rel.encode()).decode() if rel else out) / name
        if target in seen:
            raise LogError(f"{path} and {seen[target]} would both be written to {target.name}: anonymise them "
                           "into separate folders", str(out))
        if target.exists() and not force:
            raise LogError("exists (give --force to replace it)", str(target))
        seen[target] = path
        plan.append((path, target))
    return plan
