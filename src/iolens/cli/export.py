"""`iolens export LOG -o DIR`: the tables as Parquet or CSV files, or the trace for Perfetto / Chrome."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from ..errors import LogError
from ..pipeline import anonymize as anonymizing
from ..pipeline import render
from ..views import perfetto
from ..views.html.filters import Filters
from .anonymize import key_options, note_new_key
from .common import filter_options, load_one_or_job, log_argument

TRACE_SUFFIX = {"perfetto": ".pftrace", "chrome-json": ".json"}


@click.command("export")
@log_argument
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True,
              help="Directory to write into (created if missing); for perfetto/chrome-json also the trace file "
                   "itself when it ends in .pftrace/.json.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv", "perfetto", "chrome-json"]), default="parquet",
              show_default=True, help="Tables (parquet, csv) or the DXT trace for ui.perfetto.dev (perfetto: "
                                      "protobuf .pftrace; chrome-json: Chrome JSON .json).")
@filter_options
@click.option("--anonymize", is_flag=True,
              help="Export the log as `iolens anonymize` writes it: names, command line, hosts, uid, job id and "
                   "metadata as keyed tokens (--key-file; without it a new key is written beside -o).")
@key_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def command(log: str, out: Path, fmt: str, start, end, rank_from, rank_to, file_name, anonymize, key_file,
            keep_exe_name, quiet) -> None:
    """Write job.json and one file per table the log has (files, counters_<MODULE>, segments, dxt_records,
    lustre, heatmap, conflicts; a Recorder or DFTracer trace's calls, processes and spans; a job's processes
    and steps; columns: README, docs/recorder.md, docs/dftracer.md, docs/jobs.md). LOG may be a folder of one
    job's logs: its merged tables. With --format perfetto or chrome-json, write the DXT trace instead: one
    process per rank, a track per layer, a slice per operation (and a DFTracer trace's spans on a track
    above them).

    --start/--end/--from/--to/--file narrow the trace (and the segments and conflicts tables). --anonymize
    exports the anonymised log instead (docs/anonymize.md); --file then takes a token."""
    filters = Filters(start=start, end=end, rank_from=rank_from, rank_to=rank_to, file=file_name)
    if rank_from is not None and rank_to is not None and rank_to < rank_from:
        raise click.BadParameter("--to must not be below --from", param_hint="--to")
    if anonymize:
        _export_anonymized(log, out, fmt, filters, quiet, key_file, keep_exe_name)
        return
    if key_file is not None or keep_exe_name:
        raise click.BadParameter("--key-file and --keep-exe-name go with --anonymize", param_hint="--anonymize")
    if fmt in TRACE_SUFFIX:
        _export_trace(log, out, fmt, filters, quiet)
        return
    if out.exists() and not out.is_dir():
        raise click.BadParameter(f"{out} is a file; give a directory", param_hint="-o")
    for path in render.export(load_one_or_job((log,), quiet, "export")[0], out, fmt, filters=filters):
        click.echo(str(path))


def _export_anonymized(log: str, out: Path, fmt: str, filters, quiet: bool, key_file, keep_exe_name: bool) -> None:
    """The export of the anonymised log(s), made from anonymised copies in a private temporary folder (removed
    after): the tables, job.json and trace name only tokens."""
    if out.exists() and not out.is_dir() and fmt not in TRACE_SUFFIX:
        raise click.BadParameter(f"{out} is a file; give a directory", param_hint="-o")
    tokens, key_path, new_key = anonymizing.key_tokens(out, key_file, keep_exe_name)
    shown, out = out, out.absolute()
    try:
        written = _anonymized_export(log, out, fmt, filters, quiet, tokens)
    except BaseException:
        if new_key:  # nothing was exported with it: a new key would only be a stray secret
            Path(key_path).unlink(missing_ok=True)
        raise
    if new_key:
        note_new_key(key_path)
    for path in written:
        click.echo(str(shown / path.relative_to(out)))


def _anonymized_export(log: str, out: Path, fmt: str, filters, quiet: bool, tokens) -> list:
    """The files written: the anonymised copy of `log`, made in a private temporary folder, exported."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="iolens-anonymize-") as tmp:
        (copy,) = anonymizing.anonymized_copies([log], Path(tmp), tokens)
        os.chdir(tmp)  # the copies are read by relative path: job.json names no temporary folder
        try:
            copy = os.path.relpath(copy, tmp)
            if fmt in TRACE_SUFFIX:
                _export_trace(copy, out, fmt, filters, quiet)  # prints the trace's path
                return []
            return render.export(load_one_or_job((copy,), quiet, "export")[0], out, fmt, filters=filters)
        finally:
            os.chdir(here)


# what a log without operations to draw lacks, said for its source (a Darshan log or job: its DXT setting)
NO_TRACE = {
    "darshan": "no DXT trace to export (Darshan records one with DXT_ENABLE_IO_TRACE=1)",
    "dftracer": "no POSIX read or write in this DFTracer trace to export (DFTracer's preload library traces "
                "them: LD_PRELOAD=libdftracer_preload.so with DFTRACER_INIT=PRELOAD)",
    "recorder": "no POSIX or MPI-IO read or write in this Recorder trace to export",
}


def trace_path(log: str, out: Path, fmt: str) -> Path:
    """`out` itself when it names a trace file, else `<out>/<log name>.pftrace|.json`."""
    suffix = TRACE_SUFFIX[fmt]
    if out.suffix == suffix and not out.is_dir():
        return out
    if out.exists() and not out.is_dir():
        raise click.BadParameter(f"{out} is a file that does not end in {suffix}", param_hint="-o")
    name = Path(log).name
    stem = name[: -len(".darshan")] if name.endswith(".darshan") else name
    return out / (stem + suffix)


def _export_trace(log: str, out: Path, fmt: str, filters, quiet: bool) -> None:
    path = trace_path(log, out, fmt)
    data = load_one_or_job((log,), quiet, "export")[0]
    spans = getattr(data, "spans", None)
    if not data.has_dxt and (spans is None or spans.is_empty()):  # a trace of spans alone draws them
        raise LogError(f"{log}: {NO_TRACE.get(data.kind, NO_TRACE['darshan'])}")
    trace = perfetto.trace_ops(data, filters)
    if trace.ops.is_empty() and (trace.spans is None or trace.spans.is_empty()):
        click.echo("iolens: note: no operation matches the filters; the trace holds only the job", err=True)
    size = perfetto.estimate_bytes(trace.ops.height, fmt)
    if size > perfetto.BROWSER_LIMIT:
        click.echo(f"iolens: note: the trace will be about {size / 2**30:.1f} GiB, more than ui.perfetto.dev "
                   f"loads in a browser tab; open it through `trace_processor --httpd {path.name}` and the UI",
                   err=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    write = perfetto.write_perfetto if fmt == "perfetto" else perfetto.write_chrome_json
    write(trace, path)
    click.echo(str(path))
