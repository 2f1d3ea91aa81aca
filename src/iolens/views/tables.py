"""Every table iolens gives SQL and agents: names, columns with types and a one-line meaning, and how each is built.

`CATALOGUE` is the one place `iolens sql --schema`, docs/sql.md (`markdown()`, checked by a test) and the MCP
`schema` tool read. The tables keep the names and columns `iolens export` writes (views/export.py: the Log
contract's tables, `processes` and the sources' extra tables: a Recorder or DFTracer trace's `calls`, a DFTracer
trace's `spans`, a job's `steps`), plus the diagnosis (`insights`, `insight_metrics`), per-rank measures
(`ranks`), the log's `job` and `modules`, and a fleet store's own tables. A table whose columns differ by source
lists them all, each saying whose it is. Types are DuckDB's names for them (what `DESCRIBE` shows).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import polars as pl

from ..analysis.measures import log_counters, per_rank_sum, record_io_time
from ..model.darshan import LAYER_BY_MODULE

# What a table needs read before it can be built (a single Darshan log is read in two steps: see
# pipeline/sources.py): the log's counters and names only, its DXT trace too, the diagnosis, a job, a fleet store.
LIGHT, TRACE, DIAGNOSIS, JOB, STORE = "light", "trace", "diagnosis", "job", "store"


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # DuckDB's type name
    meaning: str


@dataclass(frozen=True)
class Table:
    name: str
    row: str  # one row per ...
    meaning: str
    columns: tuple
    needs: str = LIGHT
    family: bool = False  # counters_<MODULE>: one table per module, its counters as columns

    def column(self, name: str) -> Column | None:
        """The column of that name, or the pattern naming it (`synchronised_<MODEL>`, `<COUNTER>`)."""
        exact = next((c for c in self.columns if c.name == name), None)
        return exact or next((c for c in self.columns if "<" in c.name and name.startswith(c.name.split("<")[0])),
                             None)


def _cols(*rows) -> tuple:
    return tuple(Column(*r) for r in rows)


LOG_COLUMN = Column("log", "VARCHAR", "the log (or job folder) the row comes from: only when several are queried")
COUNTER_MEANING = ("Darshan's counter of that name, per record (integers; F_ counters are seconds or timestamps "
                   "from job start); -1 means not recorded")

CATALOGUE: tuple = (
    Table("job", "log", "who ran, when, for how long, with which Darshan", _cols(
        ("path", "VARCHAR", "the log's path (a job's folder)"),
        ("exe", "VARCHAR", "the command line Darshan recorded"),
        ("jobid", "BIGINT", "the scheduler's job id"),
        ("uid", "BIGINT", "the user id"),
        ("nprocs", "BIGINT", "processes (MPI ranks; a job's: every process of its steps)"),
        ("start_time", "DOUBLE", "start, epoch seconds"),
        ("end_time", "DOUBLE", "end, epoch seconds"),
        ("run_time", "DOUBLE", "run time, seconds"),
        ("log_version", "VARCHAR", "log format version"),
        ("lib_version", "VARCHAR", "Darshan runtime version (Recorder's for a Recorder trace)"),
        ("partial", "BOOLEAN", "a module ran out of memory: its records are incomplete"),
        ("recovered", "BOOLEAN", "an unfinished log: every value recovered from what was written"),
        ("metadata", "VARCHAR", "the log's key=value lines as a JSON object (h: MPI-IO hints)"),
        ("notes", "VARCHAR[]", "what the reader noticed (skipped modules, recovered parts)"),
    )),
    Table("modules", "module of the log", "which Darshan modules the log holds and whether each is whole", _cols(
        ("name", "VARCHAR", "module (POSIX, MPI-IO, STDIO, DXT_POSIX, LUSTRE, HEATMAP, ...)"),
        ("version", "BIGINT", "module version"),
        ("partial", "BOOLEAN", "Darshan ran out of memory for it: records are missing"),
        ("records", "BIGINT", "records read"),
        ("supported", "BOOLEAN", "modelled by iolens"),
        ("note", "VARCHAR", "why it was skipped or recovered"),
    ), needs=TRACE),  # the DXT modules' record counts are known once they are read
    Table("files", "file (name record)", "the files and datasets the job touched", _cols(
        ("file_id", "UBIGINT", "Darshan's 64-bit record id (joins every other table)"),
        ("name", "VARCHAR", "path (or dataset/variable name)"),
        ("mount", "VARCHAR", "longest mount point that holds it"),
        ("fs_type", "VARCHAR", "file system type of that mount"),
    )),
    Table("counters_<MODULE>", "counter record (file, rank)",
          "one module's counters (MODULE: POSIX, MPIIO, STDIO, H5F, H5D, PNETCDF_FILE, PNETCDF_VAR; MPI-IO's is "
          "also \"counters_MPI-IO\", export's file name)", _cols(
              ("file_id", "UBIGINT", "the file (files.file_id)"),
              ("rank", "BIGINT", "rank; -1: a shared file whose per-rank records Darshan reduced into one"),
              ("file_rec_id", "UBIGINT", "H5D -> H5F, PNETCDF_VAR -> PNETCDF_FILE record"),
              ("<COUNTER>", "BIGINT or DOUBLE", COUNTER_MEANING),
          ), family=True),
    Table("dxt_records", "DXT record (module, file, rank)", "what the DXT trace holds per rank and file", _cols(
        ("module", "VARCHAR", "DXT_POSIX or DXT_MPIIO"),
        ("file_id", "UBIGINT", "the file"),
        ("rank", "BIGINT", "rank"),
        ("hostname", "VARCHAR", "node"),
        ("write_count", "BIGINT", "writes traced"),
        ("read_count", "BIGINT", "reads traced"),
    ), needs=TRACE),
    Table("segments", "traced operation", "every read and write DXT recorded, with its bytes and times", _cols(
        ("module", "VARCHAR", "DXT_POSIX or DXT_MPIIO (the layer traced)"),
        ("file_id", "UBIGINT", "the file"),
        ("rank", "BIGINT", "rank"),
        ("hostname", "VARCHAR", "node"),
        ("op", "VARCHAR", "read or write"),
        ("offset", "BIGINT", "file offset, bytes (-1: not recorded)"),
        ("length", "BIGINT", "bytes requested"),
        ("start", "DOUBLE", "start, seconds from job start"),
        ("end", "DOUBLE", "end, seconds from job start (a keyword: write \"end\")"),
        ("pthread_id", "UBIGINT", "thread (40-byte segments only)"),
        ("osts", "BIGINT[]", "Lustre OSTs the request touches (files with a Lustre record)"),
    ), needs=TRACE),
    Table("conflicts", "byte range two ranks touch, one writing",
          "cross-rank overlaps on the POSIX trace (only when there are some)", _cols(
              ("file_id", "UBIGINT", "the file"),
              ("file", "VARCHAR", "its name"),
              ("kind", "VARCHAR", "write-after-write, read-after-write or write-after-read"),
              ("timing", "VARCHAR", "concurrent (a race) or ordered"),
              ("offset", "BIGINT", "first byte"),
              ("end_offset", "BIGINT", "byte after the last"),
              ("pairs", "UINTEGER", "conflicting pairs of operations merged into the range"),
              ("ranks", "BIGINT[]", "ranks involved"),
              ("start", "DOUBLE", "first operation's start, s"),
              ("end", "DOUBLE", "last operation's end, s"),
              ("synchronised_<MODEL>", "BOOLEAN", "a Recorder trace's: whether the pair is ordered by what that "
                                                  "consistency model (POSIX, commit, session, MPI-IO) counts as "
                                                  "synchronisation (null: not classified)"),
          ), needs=TRACE),
    Table("lustre", "Lustre layout component", "striping of files on Lustre", _cols(
        ("file_id", "UBIGINT", "the file"),
        ("rank", "BIGINT", "rank that recorded it"),
        ("component", "BIGINT", "layout component (PFL)"),
        ("stripe_size", "BIGINT", "bytes per stripe"),
        ("stripe_count", "BIGINT", "OSTs striped over"),
        ("stripe_pattern", "BIGINT", "Lustre pattern flags"),
        ("flags", "BIGINT", "component flags"),
        ("ext_start", "BIGINT", "component's first byte"),
        ("ext_end", "BIGINT", "component's end (-1: end of file)"),
        ("mirror_id", "BIGINT", "mirror"),
        ("pool_name", "VARCHAR", "OST pool"),
        ("osts", "BIGINT[]", "OST ids"),
    )),
    Table("heatmap", "(API, rank, time bin)", "Darshan's runtime heatmap: bytes per time bin", _cols(
        ("module", "VARCHAR", "API (POSIX, MPIIO, STDIO)"),
        ("rank", "BIGINT", "rank"),
        ("bin", "BIGINT", "bin index"),
        ("bin_width", "DOUBLE", "seconds per bin"),
        ("start", "DOUBLE", "bin start, s"),
        ("write_bytes", "BIGINT", "bytes written in the bin"),
        ("read_bytes", "BIGINT", "bytes read in the bin"),
    )),
    Table("calls", "traced call (Recorder or DFTracer trace)",
          "every call the trace holds: a Recorder trace's, with its arguments; a DFTracer trace's POSIX and STDIO "
          "calls, with the file positions they imply (docs/dftracer.md)", _cols(
              ("rank", "BIGINT", "rank (a DFTracer trace: the process, processes.rank)"),
              ("seq", "BIGINT", "order of the call on its rank"),
              ("func", "VARCHAR", "function called"),
              ("layer", "VARCHAR", "POSIX, MPI-IO, MPI, HDF5 or user (DFTracer: POSIX or STDIO)"),
              ("depth", "BIGINT", "Recorder: call depth (0: the application's own call)"),
              ("start", "DOUBLE", "start, s"),
              ("end", "DOUBLE", "end, s"),
              ("args", "VARCHAR[]", "Recorder: arguments as recorded"),
              ("path", "VARCHAR", "file path, when the call names one"),
              ("fd", "VARCHAR or BIGINT", "file descriptor or handle (Recorder: as text)"),
              ("offset", "BIGINT", "offset, bytes (DFTracer: given by the call or followed; null: not known)"),
              ("count", "BIGINT", "Recorder: bytes"),
              ("whence", "VARCHAR or BIGINT", "lseek/fseek whence (Recorder: as text)"),
              ("comm", "VARCHAR", "Recorder: MPI communicator"),
              ("tid", "BIGINT", "DFTracer: thread id"),
              ("file_id", "UBIGINT", "DFTracer: the file (files.file_id)"),
              ("ret", "BIGINT", "DFTracer: return value"),
              ("bytes", "BIGINT", "DFTracer: bytes a read or write moved (null: other calls, failed ones)"),
              ("offset_source", "VARCHAR", "DFTracer: how the offset is known (call, followed) or why not (not "
                                           "opened, open twice, append, seek end)"),
          ), needs=TRACE),
    Table("spans", "application event (DFTracer trace)",
          "the application's own events above its I/O: data loader fetches, compute steps, checkpoints, epochs",
          _cols(
              ("span_id", "BIGINT", "its row: spans are in (rank, start) order"),
              ("rank", "BIGINT", "the process (processes.rank)"),
              ("tid", "BIGINT", "thread id"),
              ("cat", "VARCHAR", "category the application gave (dataloader, compute, checkpoint, ...)"),
              ("name", "VARCHAR", "event name (fetch, step, capture, ...)"),
              ("start", "DOUBLE", "start, s from the job's start"),
              ("end", "DOUBLE", "end, s"),
              ("epoch", "BIGINT", "epoch (null where the span has none)"),
              ("step", "BIGINT", "step (null where the span has none)"),
              ("parent", "BIGINT", "span_id of the span that encloses it in the same thread (null: none)"),
              ("depth", "INTEGER", "nesting depth in its thread (0: top)"),
              ("args", "VARCHAR", "its other arguments, a JSON object (null: none)"),
          ), needs=TRACE),
    Table("ranks", "(rank, layer)", "per-rank measures from the counters: bytes, operations, time", _cols(
        ("rank", "BIGINT", "rank; -1: shared records Darshan reduced (not one rank's)"),
        ("layer", "VARCHAR", "POSIX, MPI-IO, STDIO, HDF5 or PnetCDF"),
        ("bytes_read", "BIGINT", "bytes read (<LAYER>_BYTES_READ summed)"),
        ("bytes_written", "BIGINT", "bytes written"),
        ("reads", "BIGINT", "read operations"),
        ("writes", "BIGINT", "write operations"),
        ("meta_ops", "BIGINT", "opens, seeks, stats, syncs"),
        ("read_time", "DOUBLE", "seconds in reads (<LAYER>_F_READ_TIME summed)"),
        ("write_time", "DOUBLE", "seconds in writes"),
        ("meta_time", "DOUBLE", "seconds in metadata operations"),
        ("io_time", "DOUBLE", "read + write + metadata seconds"),
        ("files", "BIGINT", "records (files) of this rank"),
    )),
    Table("insights", "insight of the diagnosis", "what `iolens diagnose --json` finds, every severity", _cols(
        ("insight", "BIGINT", "position in diagnose --json's list (joins insight_metrics)"),
        ("code", "VARCHAR", "SMALL_IO, RANK_IMBALANCE, ... (docs/diagnosis.md)"),
        ("severity", "VARCHAR", "critical, warning, info or ok"),
        ("title", "VARCHAR", "one line"),
        ("summary", "VARCHAR", "what was found, with its numbers"),
        ("key_metric", "VARCHAR", "the headline metric's name"),
        ("key_value", "DOUBLE", "its value"),
        ("files", "VARCHAR[]", "files of the evidence"),
        ("ranks", "BIGINT[]", "ranks of the evidence"),
        ("window_start", "DOUBLE", "evidence time window start, s"),
        ("window_end", "DOUBLE", "evidence time window end, s"),
        ("recommendations", "VARCHAR[]", "what to change (titles)"),
        ("source", "VARCHAR", "dxt or counters"),
        ("partial", "BOOLEAN", "drawn from a partial module"),
        ("step", "BIGINT", "a job's step (null for one log)"),
    ), needs=DIAGNOSIS),
    Table("insight_metrics", "number of an insight", "every number behind each insight", _cols(
        ("insight", "BIGINT", "insights.insight"),
        ("code", "VARCHAR", "its code"),
        ("metric", "VARCHAR", "the number's name"),
        ("value", "DOUBLE", "the number"),
    ), needs=DIAGNOSIS),
    Table("processes", "rank of a job or of a DFTracer trace",
          "which rank is which process: a job's (a folder of logs), a DFTracer trace's main process, workers and "
          "helpers", _cols(
              ("rank", "BIGINT", "rank (the job's numbering; a DFTracer trace: one per process)"),
              ("label", "VARCHAR", "how findings name it: rank N (an MPI rank, numbered in its step) or its role "
                                   "and pid (worker pid 4723)"),
              ("host", "VARCHAR", "node"),
              ("pid", "BIGINT", "process id"),
              ("step", "BIGINT", "step (steps.step; 0 for a trace)"),
              ("role", "VARCHAR", "rank N, parent, worker, process; DFTracer: main, worker or helper"),
              ("log", "VARCHAR", "its log (a DFTracer trace: its trace file or files)"),
              ("ppid", "BIGINT", "DFTracer: parent process id"),
              ("command", "VARCHAR", "DFTracer: command line (null when the trace lost it)"),
              ("start", "DOUBLE", "DFTracer: first event, s from the job's start"),
              ("end", "DOUBLE", "DFTracer: last event, s"),
              ("events", "BIGINT", "DFTracer: events in the trace"),
              ("lost_events", "BIGINT", "DFTracer: events DFTracer numbered that the trace lacks"),
          ), needs=TRACE),
    Table("steps", "step of a job", "a job's steps in start order (iolens jobs)", _cols(
        ("step", "BIGINT", "index, in start order (processes.step)"),
        ("exe", "VARCHAR", "program"),
        ("command", "VARCHAR", "command line"),
        ("start", "DOUBLE", "start, s from the job's start"),
        ("end", "DOUBLE", "end, s from the job's start"),
        ("processes", "BIGINT", "processes"),
        ("ranks", "BIGINT", "MPI ranks (0 outside an MPI launch)"),
        ("launcher", "VARCHAR", "the command line that launched it (mpiexec ...), if any"),
    ), needs=JOB),
)
# a fleet store's own tables (fleet/store.py), whose columns docs/fleet.md describes
FLEET_CATALOGUE: tuple = (
    Table("jobs", "log (or job, in a store built with --group-by job)",
          "features and diagnosis per log: the store's jobs table (columns: docs/fleet.md)", (), needs=STORE),
    Table("files", "job x file", "the store's files table (only with fleet build --files)", (), needs=STORE),
    Table("errors", "log that could not be read", "path and one-line reason", (), needs=STORE),
    Table("logs", "log of a job", "a per-job store's logs (--group-by job)", (), needs=STORE),
)
BY_NAME = {t.name: t for t in CATALOGUE}
FLEET_BY_NAME = {t.name: t for t in FLEET_CATALOGUE}
COUNTERS = BY_NAME["counters_<MODULE>"]


# tables built here with the catalogue's own schema: their columns are the catalogue's without building them
FIXED = ("job", "modules", "ranks", "insights", "insight_metrics")


def counters_name(module: str) -> str:
    """The SQL name of a module's counter table (MPI-IO's hyphen dropped: `counters_MPIIO`)."""
    return "counters_" + module.replace("-", "")


def describe(name: str, store: bool = False) -> Table | None:
    """The catalogue entry of a concrete table name (counters_POSIX -> the counters family); `store`: a fleet
    store's table."""
    if store:
        return FLEET_BY_NAME.get(name)
    if name in BY_NAME:
        return BY_NAME[name]
    if name.startswith("counters_"):
        return COUNTERS
    return None


def column_meaning(table: str, column: str, store: bool = False) -> str:
    entry = describe(table, store)
    if column == "log":
        return LOG_COLUMN.meaning
    if entry is None:
        return ""
    found = entry.column(column)
    return "" if found is None else found.meaning


def schema_entry(t: Table, columns=None) -> dict:
    """A table as `--schema --format json` and the MCP `schema` tool give it."""
    cols = t.columns if columns is None else columns
    return {"table": t.name, "row": t.row, "meaning": t.meaning,
            "columns": [{"name": c.name, "type": c.type, "meaning": c.meaning} for c in cols]}


def catalogue(store: bool = False) -> list:
    """Every table iolens can give (a fleet store's with `store`, marked so), as `schema_entry`s."""
    if store:
        return [{**schema_entry(t), "store": True} for t in FLEET_CATALOGUE]
    return [schema_entry(t) for t in CATALOGUE]


def markdown() -> str:
    """The table list docs/sql.md shows (a test checks the file holds exactly this)."""
    out = []
    for t in CATALOGUE + FLEET_CATALOGUE:
        where = " (a fleet store)" if t.needs == STORE else ""
        out.append(f"### `{t.name}`{where}\n\nOne row per {t.row}: {t.meaning}.\n")
        if t.columns:
            out.append("| column | type | meaning |\n|---|---|---|")
            out += [f"| `{c.name}` | {c.type} | {c.meaning} |" for c in t.columns]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


# --- building the tables iolens export does not write ------------------------------------------------
JOB_TYPES = {c.name: c.type for c in BY_NAME["job"].columns}
_POLARS = {"VARCHAR": pl.String, "BIGINT": pl.Int64, "DOUBLE": pl.Float64, "BOOLEAN": pl.Boolean,
           "UBIGINT": pl.UInt64, "VARCHAR[]": pl.List(pl.String), "BIGINT[]": pl.List(pl.Int64)}


def _schema(name: str) -> dict:
    return {c.name: _POLARS[c.type] for c in BY_NAME[name].columns}


def job_table(log) -> pl.DataFrame:
    j = log.job
    row = {c: j.get(c) for c in JOB_TYPES if c not in ("path", "metadata", "notes")}
    row["path"] = str(getattr(log, "path", j.get("path", "")))
    row["metadata"] = json.dumps(j.get("metadata") or {}, default=str, sort_keys=True)
    row["notes"] = [str(n) for n in j.get("notes") or []]
    row["jobid"] = _int_or_none(row["jobid"])
    row["uid"] = _int_or_none(row["uid"])
    row["partial"] = bool(j.get("partial"))
    row["recovered"] = bool(j.get("recovered"))
    return pl.DataFrame([row], schema=_schema("job"))


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def modules_table(log) -> pl.DataFrame:
    rows = [{"name": m.name, "version": int(m.version), "partial": bool(m.partial), "records": int(m.records),
             "supported": bool(m.supported), "note": m.note} for m in log.modules]
    return pl.DataFrame(rows, schema=_schema("modules"))


def ranks_table(log) -> pl.DataFrame:
    """Per (rank, layer): the layer's byte, operation and time counters summed over the rank's records, through
    the measures layer's `Counters` (-1 read as 0); shared reduced records stay rank -1."""
    frames = []
    for module, c in log_counters(log).items():
        layer = LAYER_BY_MODULE.get(module)
        if layer is None or not len(c.ranks):
            continue
        ranks = np.asarray(c.ranks, dtype=np.int64)
        own = ranks >= 0
        keys = np.unique(ranks)
        values = {
            "bytes_read": c.col(layer.bytes_read), "bytes_written": c.col(layer.bytes_written),
            "reads": _sum_cols(c, layer.reads), "writes": _sum_cols(c, layer.writes),
            "meta_ops": _sum_cols(c, layer.meta_ops), "read_time": c.col(layer.read_time),
            "write_time": c.col(layer.write_time), "meta_time": c.col(layer.meta_time),
            "io_time": record_io_time(c, layer), "files": np.ones(len(ranks), dtype=np.int64),
        }
        cols = {"rank": keys, "layer": [layer.name] * len(keys)}
        shared = (~own).any()
        n = int(ranks.max()) + 1 if own.any() else 0
        for name, v in values.items():
            per = per_rank_sum(ranks, v.astype(float), n)
            column = per[keys[keys >= 0]] if n else np.zeros(0)
            if shared:
                column = np.concatenate([[float(v[~own].sum())], column])
            cols[name] = column
        frames.append(pl.DataFrame(cols))
    schema = _schema("ranks")
    if not frames:
        return pl.DataFrame(schema=schema)
    out = pl.concat(frames)
    return out.select([pl.col(k).round(0).cast(t) if t == pl.Int64 and k != "rank" else pl.col(k).cast(t)
                       for k, t in schema.items()])


def _sum_cols(c, names) -> np.ndarray:
    present = [c.col(n) for n in names if c.has(n)]
    return np.sum(present, axis=0) if present else np.zeros(len(c.ranks))


def insights_table(insights: list) -> pl.DataFrame:
    rows = []
    for i, ins in enumerate(insights):
        ev = ins["evidence"]
        window = ev.get("time_window") or (None, None)
        key = ins.get("key_metric")
        rows.append({
            "insight": i, "code": ins["code"], "severity": ins["severity"], "title": ins["title"],
            "summary": ins["summary"], "key_metric": key,
            "key_value": None if key is None else float(ev["metrics"][key]),
            "files": [str(f) for f in ev["files"]], "ranks": [int(r) for r in ev["ranks"]],
            "window_start": window[0], "window_end": window[1],
            "recommendations": [r["title"] for r in ins["recommendations"]],
            "source": ins["source"], "partial": bool(ins["partial"]), "step": ins.get("step"),
        })
    return pl.DataFrame(rows, schema=_schema("insights"))


def insight_metrics_table(insights: list) -> pl.DataFrame:
    rows = [{"insight": i, "code": ins["code"], "metric": k, "value": float(v)}
            for i, ins in enumerate(insights) for k, v in ins["evidence"]["metrics"].items()]
    return pl.DataFrame(rows, schema=_schema("insight_metrics"))

