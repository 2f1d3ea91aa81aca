"""`iolens anonymize LOG... -o OUT`: Darshan logs with nothing that identifies the user, to share."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from .common import emit_json, json_option

LOG_SUFFIXES = (".darshan", ".darshan_partial")


def key_options(f):
    """--key-file and --keep-exe-name: how tokens are made (anonymize, export --anonymize, fleet build)."""
    f = click.option("--keep-exe-name", is_flag=True,
                     help="Keep the program's base name (its folders and every argument are still replaced).")(f)
    return click.option("--key-file", type=click.Path(dir_okay=False, path_type=Path),
                        help="The secret the tokens are keyed with: the same key gives the same tokens in every "
                             "log. Without it a new key is written beside the output (keep it private).")(f)


def tokens_for(output, key_file, keep_exe_name: bool):
    """The tokens of `key_file`, or of a new key written beside `output` (said on stderr): (Tokens, key path,
    new?). A key already beside the output is never replaced: it is named, to be passed with --key-file."""
    from ..errors import LogError
    from ..reader.anonymize import Key, Tokens, key_beside, new_key_file

    if key_file is not None:
        return Tokens(Key.from_file(key_file), keep_exe_name), key_file, False
    path = key_beside(output)
    if path.exists():
        raise LogError(f"a key is already there (from an earlier run?): pass --key-file {path} to use it, "
                       "or remove it", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    key = new_key_file(path)
    click.echo(f"iolens: note: a new key was written to {path}: keep it private (with it, anyone can test a "
               f"guessed name against the tokens); pass --key-file {path} to give other logs the same tokens",
               err=True)
    return Tokens(key, keep_exe_name), path, True


def anonymized_copies(paths, folder: Path, tokens) -> list:
    """Anonymised copies of the logs (files, or folders of logs keeping their shape) in `folder`: the paths to
    read in place of `paths`, one each. What `export --anonymize` reads; LogError on a log that cannot be read."""
    from ..errors import LogError
    from ..reader.anonymize import anonymize_file
    from ..reader.recorder import is_recorder_trace
    from ..reader.writer import write_atomically

    out = []
    for arg in map(str, paths):
        if os.path.isdir(arg) and is_recorder_trace(arg):
            raise LogError("--anonymize rewrites Darshan logs; this is a Recorder trace", arg)
        top = folder / tokens.component(os.path.basename(os.path.normpath(arg)).encode()).decode() \
            if os.path.isdir(arg) else folder
        for path, rel in find_logs([arg]):
            done = anonymize_file(path, tokens)
            target = (top / tokens.path(rel.encode()).decode() if rel else top) / done.name
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, done.pieces)
        out.append(str(top) if os.path.isdir(arg) else str(target))
    return out


def find_logs(paths) -> list:
    """[(log path, folder under OUT relative to its argument)]: files as given, folders walked for logs."""
    from ..errors import LogError

    found = []
    for arg in map(str, paths):
        if os.path.isdir(arg):
            inside = []
            for root, dirs, files in os.walk(arg):
                dirs.sort()
                rel = os.path.relpath(root, arg)
                inside += [(os.path.join(root, f), "" if rel == "." else rel) for f in sorted(files)
                           if f.endswith(LOG_SUFFIXES)]
            if not inside:
                raise LogError("no Darshan log (*.darshan, *.darshan_partial) in this folder", arg)
            found += inside
        elif os.path.exists(arg):
            found.append((arg, ""))
        else:
            raise LogError("no such file or folder", arg)
    return found


@click.command("anonymize")
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=str),
              help="The anonymised log (one LOG file), or a folder (several logs, a folder of logs, an existing "
                   "folder or a name ending in /; created): the logs under their anonymised names, folders "
                   "as tokens.")
@key_options
@click.option("--force", is_flag=True, help="Replace outputs that exist.")
@click.option("--report", "report_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report (JSON: what was replaced, kept, dropped and not judged) to this file.")
@click.option("--map", "map_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Write every original and its token (JSON) to this file: private, like the key.")
@json_option
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no report on the terminal.")
def command(logs, out: str, key_file, keep_exe_name, force, report_file, map_file, as_json, quiet) -> None:
    """Write each Darshan LOG (files or folders of logs) again, in its own format, with nothing that
    identifies the user: names (one token per path component), the command line, mount points, host names,
    uid, job id and job metadata become keyed tokens; record ids are recomputed from the new names; every
    counter and DXT segment is unchanged. darshan-parser and PyDarshan read the result as they read the
    original. What was replaced, kept and dropped is printed on a terminal (--report FILE, --json).
    See docs/anonymize.md."""
    from ..errors import LogError
    from ..reader.anonymize import anonymize_file
    from ..reader.writer import write_atomically

    found = find_logs(logs)
    single = len(found) == 1 and not os.path.isdir(logs[0]) and not os.path.isdir(out) and not out.endswith(
        ("/", os.sep))
    out = Path(out)
    if not single and out.exists() and not out.is_dir():
        raise LogError("exists and is not a folder (several logs go into a folder)", str(out))
    tokens, key_path, new_key = tokens_for(out, key_file, keep_exe_name)
    plan = _targets(found, out, single, tokens, force)
    reports, pairs, failed = [], [], 0
    with _progress(len(plan), not (quiet or as_json) and sys.stderr.isatty()) as step:
        for path, target in plan:
            try:
                done = anonymize_file(path, tokens)
                target.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(target, done.pieces, force=force)
            except LogError as exc:
                failed += 1
                click.echo(f"iolens: error: {exc}", err=True)
            else:
                done.report.output = str(target)
                reports.append(done.report)
                pairs.append({"input": str(path), "output": str(target)})
            step()
    failed += len(found) - len(plan)
    result = {"key_file": str(key_path), "new_key": new_key, "logs": [r.to_dict() for r in reports],
              "failed": failed}
    if report_file is not None:
        write_atomically(report_file, [(0, (json.dumps(result, indent=2) + "\n").encode())], force=True)
    if map_file is not None:
        write_atomically(map_file, [(0, _map_text(tokens, pairs).encode())], force=True, mode=0o600)
    if as_json:
        emit_json(result)
    elif sys.stdout.isatty() and not quiet:
        for pair, report in zip(pairs, reports):
            click.echo(f"{pair['input']} ->")
            click.echo("\n".join(report.lines()))
    else:
        for report in reports:
            click.echo(report.output)
    if failed:
        sys.exit(2)


def _targets(found: list, out: Path, single: bool, tokens, force: bool) -> list:
    """[(log, output path)], every output name checked before anything is written: two logs may not share
    one, and an existing file is replaced only with --force. A log whose job region cannot be read is said
    (one line) and left out."""
    from ..errors import LogError
    from ..reader.anonymize import anonymized_name

    if single:
        if out.exists() and not force:
            raise LogError("exists (give --force to replace it)", str(out))
        return [(found[0][0], out)]
    plan, seen = [], {}
    for path, rel in found:
        try:
            name = anonymized_name(path, tokens)
        except LogError as exc:
            click.echo(f"iolens: error: {exc}", err=True)
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


def _map_text(tokens, pairs: list) -> str:
    def text(value):
        return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else value

    kinds = {kind: {str(text(k)): text(v) for k, v in values.items()} for kind, values in tokens.originals.items()}
    return json.dumps({"logs": pairs, "tokens": kinds}, indent=2) + "\n"


class _progress:
    """A progress bar over the logs on a terminal; a no-op step otherwise."""

    def __init__(self, total: int, show: bool):
        self.total, self.show, self.bar = total, show and total > 1, None

    def __enter__(self):
        if not self.show:
            return lambda: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("anonymising"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            transient=True)
        self.bar.__enter__()
        task = self.bar.add_task("logs", total=self.total)
        return lambda: self.bar.advance(task)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
