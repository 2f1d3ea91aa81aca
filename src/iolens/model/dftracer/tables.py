"""The tables of a DFTracer trace, from the reader's columns: processes, calls (every POSIX/STDIO call, with the
file positions the trace implies), DXT-shaped segments (the POSIX reads and writes) and spans (the application's
events: data loader, compute, checkpoint, ...).

Times are seconds from the job's start (the earliest event of any process). A process is a rank: processes are
numbered roots first (the main process), then their children (workers before helpers), each in start order.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import polars as pl

from ...reader.dftracer import NA, DFTracerRaw, file_positions, span_nesting
from ..log import MODULE, OP, SEGMENT_SCHEMA
from ..recorder.segments import file_id

# What a call does to a file position (native/src/dftracer.rs `kind`)
OTHER, OPEN, OPEN_APPEND, CLOSE, LSEEK, FSEEK, FTELL, READ, WRITE, PREAD, PWRITE = range(11)
READS, WRITES = (READ, PREAD), (WRITE, PWRITE)
# How an operation's offset is known (native/src/dftracer.rs `positions`); null for calls that are no read/write
OFFSET_SOURCES = ("call", "followed", "not opened", "open twice", "append", "seek end")
OFFSET_SOURCE = pl.Enum(list(OFFSET_SOURCES))
LAYER = pl.Enum(["POSIX", "STDIO"])
# processes that a Python job starts beside its own (they move no data of the job's)
HELPER_COMMANDS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver",
                   "multiprocessing.semaphore_tracker")

# the Log contract's processes columns (rank, label, host, pid, step, role, log), then DFTracer's own
PROCESS_SCHEMA = {"rank": pl.Int64, "label": pl.String, "host": pl.String, "pid": pl.Int64, "step": pl.Int64,
                  "role": pl.String, "log": pl.String, "ppid": pl.Int64, "command": pl.String, "start": pl.Float64,
                  "end": pl.Float64, "events": pl.Int64, "lost_events": pl.Int64}
FILE_SCHEMA = {"file_id": pl.UInt64, "name": pl.String}
CALL_SCHEMA = {"rank": pl.Int64, "tid": pl.Int64, "seq": pl.Int64, "layer": LAYER, "func": pl.String,
               "file_id": pl.UInt64, "path": pl.String, "start": pl.Float64, "end": pl.Float64, "ret": pl.Int64,
               "bytes": pl.Int64, "offset": pl.Int64, "offset_source": OFFSET_SOURCE, "whence": pl.Int64,
               "fd": pl.Int64}
SPAN_SCHEMA = {"span_id": pl.Int64, "rank": pl.Int64, "tid": pl.Int64, "cat": pl.String, "name": pl.String,
               "start": pl.Float64, "end": pl.Float64, "epoch": pl.Int64, "step": pl.Int64, "parent": pl.Int64,
               "depth": pl.Int32, "args": pl.String}


def _nullable(values: np.ndarray) -> pl.Series:
    """An Int64 Series with the reader's missing-value mark (i64 minimum) as null."""
    s = pl.Series(values, dtype=pl.Int64)
    if not (values == NA).any():
        return s
    return pl.select(pl.when(s != NA).then(s)).to_series()


class Layout:
    """Who is who in a trace: processes (as ranks), the job's time origin and unit, hosts and file names."""

    def __init__(self, raw: DFTracerRaw):
        self.raw = raw
        self.ticks = raw.ticks  # per second
        self.t0 = raw.t0
        self.strings = raw.strings
        self.files = raw.string_map("FH")
        self.commands = raw.string_map("SH")
        procs = _with_hosts(raw.procs)
        self.processes, rank_of_row = self._processes(procs)
        self.rank_of_proc = rank_of_row  # a `raw.procs` row -> its rank

    def _processes(self, rows: dict) -> tuple:
        """The processes table (one row per (pid, host) over all files) and each file row's rank."""
        raw = self.raw
        hosts = raw.string_map("HH")
        frame = pl.DataFrame(rows).with_row_index("_row")
        summed = {}  # a process row's events that aggregated records hold (not lost: summed)
        for proc, _, _, _, _, a in raw.aggregated:
            summed[proc] = summed.get(proc, 0) + _count(a)
        frame = frame.with_columns(with_id=pl.col("with_id") + pl.col("_row").replace_strict(
            summed, default=0, return_dtype=pl.Int64))
        starts = {proc: (ts, a) for proc, ts, name, a in raw.internal if name == "start"}
        ends = {proc: (ts, a) for proc, ts, name, a in raw.internal if name == "end"}
        start_rows = pl.DataFrame({"_row": list(starts), "_start_ts": [v[0] for v in starts.values()]},
                                  schema={"_row": pl.UInt32, "_start_ts": pl.Int64})
        per = (frame.join(start_rows, on="_row", how="left")
               .group_by("pid", "host")
               .agg(pl.col("_row"), pl.col("events").sum(), pl.col("first").min(), pl.col("last").max(),
                    pl.col("max_id").max(), pl.col("with_id").sum(), pl.col("file").unique().sort())
               .sort("first", "pid"))
        out = []
        for p in per.iter_rows(named=True):
            start_args = next((starts[r][1] for r in p["_row"] if r in starts), {})
            end_args = next((ends[r][1] for r in p["_row"] if r in ends), {})
            expected = max(p["max_id"] if p["max_id"] != NA else 0, int(end_args.get("num_events") or 0))
            host = self.strings[p["host"]] if p["host"] >= 0 else None
            out.append({
                "_rows": p["_row"], "pid": p["pid"], "ppid": start_args.get("ppid"),
                "host": hosts.get(host, host) if host else None,
                # DFTracer 2 and 1.0.6-1.0.8 name the command by a hash (SH event; 1.0.x: a number), 1.0.0-1.0.5
                # write it in the start event (`cmd`)
                "command": _command(self.commands.get(_text(start_args.get("cmd_hash")))
                                    or _text(start_args.get("cmd"))),
                "start": (p["first"] - self.t0) / self.ticks, "end": (p["last"] - self.t0) / self.ticks,
                "events": p["events"], "lost_events": max(expected - p["with_id"], 0),
                "_cwd": self.files.get(_text(start_args.get("cwd"))),
                "version": _int(start_args.get("version")),
                "log": ", ".join(raw.files[f].path for f in p["file"]),  # its trace file(s)
            })
        procs = _number(pl.DataFrame(out, schema={
            "_rows": pl.List(pl.UInt32), "pid": pl.Int64, "ppid": pl.Int64, "host": pl.String, "command": pl.String,
            "start": pl.Float64, "end": pl.Float64, "events": pl.Int64, "lost_events": pl.Int64, "_cwd": pl.String,
            "version": pl.Int64, "log": pl.String}))
        rank_of_row = np.zeros(len(rows["pid"]), dtype=np.int64)
        for rank, file_rows in zip(procs["rank"].to_list(), procs["_rows"].to_list()):
            rank_of_row[file_rows] = rank
        return procs, rank_of_row


def _with_hosts(procs: dict) -> dict:
    """A process row that names no host takes its pid's one host where the trace names one (a start event
    carries it when the process's calls do not)."""
    host = procs["host"]
    if not (host < 0).any():
        return procs
    known = {}
    for pid, h in zip(procs["pid"].tolist(), host.tolist()):
        if h >= 0:
            known.setdefault(pid, set()).add(h)
    fixed = np.array([h if h >= 0 or len(known.get(pid, ())) != 1 else next(iter(known[pid]))
                      for pid, h in zip(procs["pid"].tolist(), host.tolist())], dtype=np.int64)
    return {**procs, "host": fixed}


def _text(value) -> str:
    """An event argument as text: a hash DFTracer 1.0.x wrote as a number is the FH/HH/SH value's text."""
    return "" if value is None or isinstance(value, (dict, list)) else str(value)


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _count(args: dict) -> int:
    """The events an aggregated record sums (`dft_cnt`, 1 when it does not say)."""
    try:
        return max(int(args.get("dft_cnt", 1)), 0)
    except (TypeError, ValueError):
        return 1


def _command(text: str | None) -> str | None:
    """DFTracer joins a command's arguments with ';'."""
    return text.replace(";", " ").strip() if text else None


def _number(procs: pl.DataFrame) -> pl.DataFrame:
    """Ranks: roots (a parent not traced) first, then their children (workers before helpers), each in start
    order; role and label."""
    keys = list(zip(procs["pid"].to_list(), procs["host"].to_list()))
    parent = dict(zip(keys, procs["ppid"].to_list()))
    depth = []
    for pid, host in keys:
        d, seen = 0, set()
        while (parent.get((pid, host)), host) in parent and pid not in seen:
            seen.add(pid)
            pid, d = parent[(pid, host)], d + 1
        depth.append(d)
    helper = pl.lit(False)
    for marker in HELPER_COMMANDS:
        helper = helper | pl.col("command").fill_null("").str.contains(marker, literal=True)
    # grouped as the page shows them: the main processes, their workers, then the helpers
    procs = (procs.with_columns(_depth=pl.Series(depth, dtype=pl.Int64))
             .with_columns(_helper=(pl.col("_depth") > 0) & helper)
             .sort("_depth", "_helper", "start", "pid").drop("_helper"))
    role = (pl.when(pl.col("_depth") == 0).then(pl.lit("main")).when(helper).then(pl.lit("helper"))
            .otherwise(pl.lit("worker")))
    label = pl.format("{} pid {}", role, pl.col("pid"))
    if procs["host"].n_unique() > 1:
        label = pl.format("{}@{}", label, pl.col("host").fill_null("?"))
    return procs.with_columns(rank=pl.int_range(pl.len(), dtype=pl.Int64), role=role, label=label,
                              step=pl.lit(0, dtype=pl.Int64))  # one trace: one step (contract `steps`)


def process_table(layout: Layout) -> pl.DataFrame:
    return layout.processes.select(list(PROCESS_SCHEMA))


def _dense(codes: np.ndarray, size: int) -> tuple:
    """(new codes, the old code of each new one): `codes` (0..size-1; -1 or size and above: none) renumbered
    0..k-1 in order of their old value, none as -1; in linear time (no sort of the rows)."""
    codes = np.where((codes < 0) | (codes > size), size, codes) if len(codes) and (
        codes.max() > size or codes.min() < 0) else codes
    present = np.zeros(size + 1, dtype=bool)
    present[codes] = True
    used = np.flatnonzero(present[:size])
    new = np.full(size + 1, -1, dtype=np.int64)
    new[used] = np.arange(len(used))
    return new[codes], used


def _enum(codes: np.ndarray, names: list, dtype=None) -> pl.Series:
    """A Series of `names[code]` (null for -1) as `dtype` (an Enum of `names` by default; Categorical), from
    the codes: a gather of the names' codes, no string made per row."""
    index = pl.Series(codes, dtype=pl.Int64)
    if (codes < 0).any():
        index = pl.select(pl.when(index >= 0).then(index)).to_series()
    return pl.Series(names, dtype=dtype or pl.Enum(names)).gather(index.cast(pl.UInt32))


def file_names(layout: Layout, rank: np.ndarray, file_code: np.ndarray) -> tuple:
    """Each call's file as (file_id array, has-a-file mask, path Series), and the files table (file_id, name):
    the FH metadata's
    name, a relative one joined to the process's working directory; a hash no metadata event names stays as
    `<file HASH>`. Done per distinct (working directory, file) pair, gathered per call."""
    procs = layout.processes.sort("rank")
    cwds = procs["_cwd"].to_list()
    cwd_names = sorted({c for c in cwds if c}, key=str)
    cwd_index = np.array([cwd_names.index(c) + 1 if c else 0 for c in cwds], dtype=np.int64)
    nstrings = len(layout.strings) + 1  # (the last: no file)
    if len(cwd_names) > 1:
        pair = cwd_index[rank] * nstrings + np.minimum(file_code, nstrings - 1)
    else:  # one working directory (or none): the file code alone says the name
        pair = file_code
        cwd_index = np.minimum(cwd_index, 1)
    pair_code, used = _dense(pair, (len(cwd_names) + 1) * nstrings)
    names = []
    for p in used.tolist():
        if len(cwd_names) > 1:
            cwd, code = cwd_names[p // nstrings - 1] if p >= nstrings else None, p % nstrings
        else:
            cwd, code = (cwd_names[0] if cwd_names else None), p
        if code >= len(layout.strings):
            names.append(None)
            continue
        h = layout.strings[code]
        name = layout.files.get(h)
        if name is None:
            name = f"<file {h}>"
        elif cwd and not name.startswith(("/", "<")) and ":[" not in name:
            name = os.path.normpath(os.path.join(cwd, name))
        names.append(name)
    unique_names = sorted({n for n in names if n is not None})
    ids = np.array([file_id(n) if n is not None else 0 for n in names] + [0], dtype=np.uint64)
    missing = np.array([n is None for n in names] + [True])[pair_code]
    pair_code = np.where(missing, -1, pair_code) if missing.any() else pair_code
    has_file = pair_code >= 0
    file_ids = ids[pair_code]
    position = {n: i for i, n in enumerate(unique_names)}
    position[None] = -1
    name_code = np.array([position[n] for n in names] + [-1], dtype=np.int64)[pair_code]
    files = (pl.DataFrame({"file_id": pl.Series(ids[:-1], dtype=pl.UInt64), "name": pl.Series(names, dtype=pl.String)})
             .drop_nulls().unique("file_id", keep="first", maintain_order=True))
    return file_ids, has_file, _enum(name_code, unique_names, pl.String), files  # (string views gathered)


@dataclass
class IoColumns:
    """The calls table (with `kind`, for the counters), the files they name, and the per-call numpy columns the
    segments are cut from (no query over the calls table)."""
    frame: pl.DataFrame
    files: pl.DataFrame
    rank: np.ndarray
    file_id: np.ndarray  # uint64, valid where has_file
    has_file: np.ndarray
    offset: np.ndarray  # NA where unknown


def io_frame(layout: Layout) -> IoColumns:
    """Every POSIX/STDIO call with its rank, times, file and (for reads and writes) offset and its source
    (rows in the trace files' order; `seq` numbers each rank's calls in time order); and the files they name."""
    io = layout.raw.io
    if not len(io.get("start", ())):
        empty = np.zeros(0, dtype=np.int64)
        return IoColumns(pl.DataFrame(schema={**CALL_SCHEMA, "kind": pl.UInt8}), pl.DataFrame(schema=FILE_SCHEMA),
                         empty, empty.astype(np.uint64), empty.astype(bool), empty)
    rank = layout.rank_of_proc[io["proc"]]
    key = io["file"].astype(np.int64) * 2 + io["stdio"]
    offset, source, seq = file_positions(rank, key, io["start"], io["kind"], io["bytes"], io["offset"], io["ret"],
                                         io["whence"])
    funcs, func_names = _dense(io["func"], len(layout.strings))
    file_ids, has_file, paths, files = file_names(layout, rank, io["file"])
    ids = pl.Series(file_ids, dtype=pl.UInt64)
    frame = pl.DataFrame({
        "rank": rank, "tid": _nullable(io["tid"]), "seq": seq,
        "layer": _enum(io["stdio"], LAYER.categories.to_list(), LAYER),
        "func": _enum(funcs, [layout.strings[c] for c in func_names], pl.String),
        "file_id": ids if has_file.all() else pl.select(pl.when(pl.Series(has_file)).then(ids)).to_series(),
        "path": paths, "start": io["start"], "end": io["end"],
        "ret": _nullable(io["ret"]), "bytes": _nullable(io["bytes"]), "offset": _nullable(offset),
        "offset_source": _enum(source.astype(np.int64) - 1, list(OFFSET_SOURCES), OFFSET_SOURCE),
        "whence": _small(io["whence"]), "fd": _small(io["fd"]),
        "kind": pl.Series(io["kind"], dtype=pl.UInt8),
    })
    return IoColumns(frame, files, rank, file_ids, has_file, offset)


def _small(values: np.ndarray) -> pl.Series:
    """An Int64 Series of a narrow column whose -1 means none (null)."""
    s = pl.Series(values).cast(pl.Int64)
    return pl.select(pl.when(s >= 0).then(s)).to_series() if (values < 0).any() else s


def calls_table(io: IoColumns) -> pl.DataFrame:
    return io.frame.select(list(CALL_SCHEMA))


def segments_table(io: IoColumns, layout: Layout) -> pl.DataFrame:
    """The POSIX reads and writes that returned (a read at end of file: 0 bytes) as DXT_POSIX segments; an
    offset the trace cannot give is -1 (the analyses' 'not recorded')."""
    raw = layout.raw.io
    kind = raw.get("kind", np.zeros(0, dtype=np.uint8))
    reads = np.isin(kind, READS)
    rows = np.zeros(0, dtype=np.int64)
    if len(kind):
        rows = np.flatnonzero((raw["stdio"] == 0) & (reads | np.isin(kind, WRITES)) & (raw["bytes"] != NA)
                              & io.has_file)
    if not len(rows):
        return pl.DataFrame(schema={**SEGMENT_SCHEMA, "pthread_id": pl.UInt64})
    hosts = layout.processes.sort("rank")["host"].fill_null("").to_list()
    names = sorted(set(hosts))
    rank = io.rank[rows]
    offset, tid = io.offset[rows], raw["tid"][rows]
    return pl.DataFrame({
        "module": pl.Series(["DXT_POSIX"], dtype=MODULE).new_from_index(0, len(rows)),
        "file_id": pl.Series(io.file_id[rows], dtype=pl.UInt64),
        "rank": rank,
        "hostname": _enum(np.array([names.index(h) for h in hosts], dtype=np.int64)[rank], names, pl.Categorical),
        "op": _enum(reads[rows].astype(np.int64), list(OP.categories), OP),  # OP: write (0), read (1)
        "offset": np.where(offset == NA, -1, offset),
        "length": raw["bytes"][rows], "start": raw["start"][rows], "end": raw["end"][rows],
        "pthread_id": pl.Series(np.where(tid == NA, 0, tid).astype(np.uint64), dtype=pl.UInt64),
    })


def spans_table(layout: Layout) -> pl.DataFrame:
    """One row per application event: its rank, thread, category, name, times, epoch and step, the span that
    encloses it in its thread (`parent`, a span_id) and its depth there, its other arguments as JSON. In
    (rank, start) order; span_id is the row number."""
    sp = layout.raw.spans
    if not len(sp.get("start", ())):
        return pl.DataFrame(schema=SPAN_SCHEMA)
    size = len(layout.strings)
    cats, cat_names = _dense(sp["cat"], size)
    names, name_names = _dense(sp["name"], size)
    frame = pl.DataFrame({
        "rank": layout.rank_of_proc[sp["proc"]], "tid": _nullable(sp["tid"]), "start": sp["start"], "end": sp["end"],
        "cat": _enum(cats, [layout.strings[c] for c in cat_names]).cast(pl.String),
        "name": _enum(names, [layout.strings[c] for c in name_names]).cast(pl.String),
        "epoch": _nullable(sp["epoch"]), "step": _nullable(sp["step"]),
        "args": pl.Series(sp["args"], dtype=pl.String),
    }).sort("rank", "start", maintain_order=True).with_columns(span_id=pl.int_range(pl.len(), dtype=pl.Int64))
    thread = frame.select(pl.struct("rank", pl.col("tid").fill_null(-1)).rank("dense").cast(pl.Int64)).to_series()
    parent, depth = span_nesting(thread.to_numpy(), frame["start"].to_numpy(), frame["end"].to_numpy())
    return frame.with_columns(parent=pl.Series(parent).replace(-1, None),
                              depth=pl.Series(depth, dtype=pl.Int32)).select(list(SPAN_SCHEMA))


AGGREGATED_SCHEMA = {"rank": pl.Int64, "tid": pl.Int64, "cat": pl.String, "name": pl.String, "start": pl.Float64,
                     "count": pl.Int64, "time": pl.Float64, "bytes": pl.Int64, "path": pl.String}
MOVES_BYTES = ("read", "pread", "pread64", "readv", "preadv", "preadv2", "write", "pwrite", "pwrite64", "writev",
               "pwritev", "pwritev2", "fread", "fwrite")


def _sum(args: dict, key: str):
    """A summed argument of an aggregated record: `key_sum`, or `key` itself for a record of one event."""
    value = args.get(f"{key}_sum", args.get(key))
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _moved(name: str, args: dict):
    """The bytes an aggregated read or write record moved: its returns summed (times the item size for
    fread/fwrite, when every call had one size); None for other functions or when it cannot be said."""
    if name not in MOVES_BYTES:
        return None
    ret = _sum(args, "ret")
    if ret is None or ret < 0 or args.get("ret_min", 0) < 0:
        return None  # a failed call's -1 is in the sum
    if name in ("fread", "fwrite"):
        size = args.get("size", args.get("size_max"))
        if size is None or args.get("size_min", size) != size:
            return None
        ret *= size
    return int(ret)


def aggregated_table(layout: Layout) -> pl.DataFrame:
    """One row per aggregated record (DFTracer 2's aggregation mode, DFTRACER_ENABLE_AGGREGATION=1): the
    process (rank) and thread, category and function (or span) name, the interval's start (seconds), how many
    events it sums, their time (seconds) and, for reads and writes, the bytes they moved; the file when the
    record names one (`fhash`)."""
    rows = []
    ticks = layout.ticks
    for proc, tid, ts, cat, name, args in layout.raw.aggregated:
        dur = _sum(args, "dur")
        file = _text(args.get("fhash", args.get("fname")))
        path = (layout.files.get(file) or f"<file {file}>") if file else None
        rows.append((int(layout.rank_of_proc[proc]), tid, cat, name, (ts - layout.t0) / ticks, _count(args),
                     dur / ticks if dur is not None else None, _moved(name, args), path))
    return pl.DataFrame(rows, schema=AGGREGATED_SCHEMA, orient="row").sort("rank", "start", "cat", "name",
                                                                            maintain_order=True)
