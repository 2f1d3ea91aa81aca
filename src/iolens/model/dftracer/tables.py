"""The tables of a DFTracer trace, from the reader's columns: processes, calls (every POSIX/STDIO call, with the
file positions the trace implies), DXT-shaped segments (the POSIX reads and writes) and spans (the application's
events: data loader, compute, checkpoint, ...).

Times are seconds from the job's start (the earliest event of any process). A process is a rank: processes are
numbered roots first (the main process), then their children, each in start order.
"""
from __future__ import annotations

import os

import numpy as np
import polars as pl

from ...reader import _native
from ...reader.dftracer import NA, DFTracerRaw
from ..log import MODULE, OP, SEGMENT_SCHEMA
from ..recorder.segments import file_id

# What a call does to a file position (native/src/dftracer.rs `kind`)
OTHER, OPEN, OPEN_APPEND, CLOSE, LSEEK, FSEEK, FTELL, READ, WRITE, PREAD, PWRITE = range(11)
READS, WRITES = (READ, PREAD), (WRITE, PWRITE)
# How an operation's offset is known (native/src/dftracer.rs `positions`); null for calls that are no read/write
OFFSET_SOURCES = ("call", "followed", "unopened", "open twice", "append")
OFFSET_SOURCE = pl.Enum(list(OFFSET_SOURCES))
LAYER = pl.Enum(["POSIX", "STDIO"])
ROLE = pl.Enum(["main", "worker", "helper"])
# processes that a Python job starts beside its own (they move no data of the job's)
HELPER_COMMANDS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver", "multiprocessing.semaphore_tracker")

PROCESS_SCHEMA = {"rank": pl.Int64, "label": pl.String, "host": pl.String, "pid": pl.Int64, "ppid": pl.Int64,
                  "step": pl.Int64, "role": ROLE, "command": pl.String, "start": pl.Float64, "end": pl.Float64,
                  "events": pl.Int64, "lost_events": pl.Int64, "trace_file": pl.String}
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
        self.strings = raw.strings
        hosts = raw.string_map("HH")
        self.files = raw.string_map("FH")
        self.commands = raw.string_map("SH")
        io, spans = raw.io, raw.spans
        code = {s: i for i, s in enumerate(raw.strings)}
        starts = [(pid, ts, eid, args) for pid, ts, eid, name, args in raw.internal if name == "start"]
        ends = [(pid, ts, eid, args) for pid, ts, eid, name, args in raw.internal if name == "end"]
        # every (host, pid) with an event; events without a host go to their pid's host when it has one
        pids = np.concatenate([io["pid"], spans["pid"], np.array([e[0] for e in raw.internal], dtype=np.int64)])
        host_of_event = np.concatenate([io["host"], spans["host"], np.array(
            [code.get(a.get("hhash"), -1) for _, _, _, _, a in raw.internal], dtype=np.int64)])
        self._host_fix = _host_per_pid(pids, host_of_event)
        keys = self.key(pids, host_of_event)
        self.keys = np.unique(keys)
        t_first = [arr.min() for arr in (io["ts"], spans["ts"]) if len(arr)]
        t_first += [ts for _, ts, _, _ in starts]
        self.t0 = int(min(t_first)) if t_first else 0
        self.processes = self._processes(keys, hosts, starts, ends)
        self.rank_of_key = dict(zip(self.processes["_key"].to_list(), self.processes["rank"].to_list()))
        self._rank_lookup = np.array([self.rank_of_key[k] for k in self.keys], dtype=np.int64)

    def key(self, pid: np.ndarray, host: np.ndarray) -> np.ndarray:
        host = np.where(host < 0, self._host_fix(pid), host)
        return (host + 1) * (1 << 32) + (pid & 0xFFFFFFFF)

    def ranks(self, pid: np.ndarray, host: np.ndarray) -> np.ndarray:
        return self._rank_lookup[np.searchsorted(self.keys, self.key(pid, host))]

    def seconds(self, ts: np.ndarray) -> np.ndarray:
        return (ts - self.t0) / self.ticks  # (a division: exact for whole microseconds)

    def _processes(self, keys, hosts, starts, ends) -> pl.DataFrame:
        raw = self.raw
        code = {s: i for i, s in enumerate(raw.strings)}
        start_of = {self._key1(pid, code.get(a.get("hhash"), -1)): (ts, a) for pid, ts, _, a in starts}
        end_of = {self._key1(pid, code.get(a.get("hhash"), -1)): (ts, a) for pid, ts, _, a in ends}
        io, spans = raw.io, raw.spans
        all_ts = np.concatenate([io["ts"], spans["ts"]])
        all_end = np.concatenate([io["ts"] + io["dur"], spans["ts"] + spans["dur"]])
        ids = np.concatenate([io["id"], spans["id"], np.array([e[2] for e in raw.internal], dtype=np.int64)])
        frame = pl.DataFrame({"_key": keys, "id": ids}).with_columns(
            ts=pl.Series(np.concatenate([all_ts, np.array([e[1] for e in raw.internal], dtype=np.int64)])),
            end=pl.Series(np.concatenate([all_end, np.array([e[1] for e in raw.internal], dtype=np.int64)])))
        per = (frame.group_by("_key").agg(
            pl.col("ts").min().alias("first"), pl.col("end").max().alias("last"),
            pl.len().alias("events"),
            pl.col("id").filter(pl.col("id") != NA).max().alias("max_id"),
            (pl.col("id") != NA).sum().alias("with_id")).sort("_key"))
        rows = []
        for key, first, last, events, max_id, with_id in per.iter_rows():
            pid, host_code = key & 0xFFFFFFFF, (key >> 32) - 1
            ts0, start_args = start_of.get(key, (first, {}))
            ts1, end_args = end_of.get(key, (last, {}))
            expected = max(int(max_id or 0), int(end_args.get("num_events") or 0))
            cwd = self.files.get(start_args.get("cwd", ""), None)
            rows.append({
                "_key": key, "pid": pid, "ppid": start_args.get("ppid"),
                "host": hosts.get(self.strings[host_code], self.strings[host_code]) if host_code >= 0 else None,
                "command": _command(self.commands.get(start_args.get("cmd_hash", ""))),
                "start": (min(ts0, first) - self.t0) / self.ticks, "end": (max(ts1, last) - self.t0) / self.ticks,
                "events": int(events), "lost_events": max(expected - int(with_id), 0), "_cwd": cwd,
                "version": start_args.get("version"),
            })
        procs = pl.DataFrame(rows, schema={"_key": pl.Int64, "pid": pl.Int64, "ppid": pl.Int64, "host": pl.String,
                                           "command": pl.String, "start": pl.Float64, "end": pl.Float64,
                                           "events": pl.Int64, "lost_events": pl.Int64, "_cwd": pl.String,
                                           "version": pl.Int64})
        return _number(procs, self.raw)

    def _key1(self, pid: int, host: int) -> int:
        return int(self.key(np.array([pid], dtype=np.int64), np.array([host], dtype=np.int64))[0])


def _host_per_pid(pids: np.ndarray, hosts: np.ndarray):
    """pid -> its one known host code (for events that name none): a function over arrays."""
    known = hosts >= 0
    pairs = np.unique(np.stack([pids[known], hosts[known]]), axis=1) if known.any() else np.zeros((2, 0), np.int64)
    lone, counts = np.unique(pairs[0], return_counts=True)
    single = lone[counts == 1]
    host_of = dict(zip(pairs[0][np.isin(pairs[0], single)].tolist(), pairs[1][np.isin(pairs[0], single)].tolist()))

    def fix(pid: np.ndarray) -> np.ndarray:
        if not host_of:
            return np.full(len(pid), -1, dtype=np.int64)
        return np.array([host_of.get(p, -1) for p in pid.tolist()], dtype=np.int64) if len(pid) < 4096 else \
            pl.Series(pid).replace_strict(host_of, default=-1, return_dtype=pl.Int64).to_numpy()
    return fix


def _command(text: str | None) -> str | None:
    """DFTracer joins a command's arguments with ';'."""
    return text.replace(";", " ").strip() if text else None


def _number(procs: pl.DataFrame, raw: DFTracerRaw) -> pl.DataFrame:
    """Ranks: roots (a parent not traced) first, then their children, each in start order; role and label."""
    pid_host = set(zip(procs["pid"].to_list(), procs["host"].to_list()))
    depth = []
    parent = dict(zip(zip(procs["pid"].to_list(), procs["host"].to_list()), procs["ppid"].to_list()))
    for pid, host in zip(procs["pid"].to_list(), procs["host"].to_list()):
        d, seen = 0, set()
        while (parent.get((pid, host)), host) in pid_host and pid not in seen:
            seen.add(pid)
            pid, d = parent[(pid, host)], d + 1
        depth.append(d)
    many_hosts = procs["host"].n_unique() > 1
    procs = procs.with_columns(_depth=pl.Series(depth, dtype=pl.Int64)).sort("_depth", "start", "pid")
    helper = pl.lit(False)
    for marker in HELPER_COMMANDS:
        helper = helper | pl.col("command").fill_null("").str.contains(marker, literal=True)
    role = (pl.when(pl.col("_depth") == 0).then(pl.lit("main")).when(helper).then(pl.lit("helper"))
            .otherwise(pl.lit("worker")))
    label = pl.format("{} pid {}", role, pl.col("pid"))
    if many_hosts:
        label = pl.format("{}@{}", label, pl.col("host").fill_null("?"))
    files = {pid: ", ".join(os.path.basename(f.path) for f in raw.files if pid in f.pids)
             for pid in procs["pid"].to_list()}
    return procs.with_columns(rank=pl.int_range(pl.len(), dtype=pl.Int64), role=role.cast(ROLE), label=label,
                              step=pl.lit(None, dtype=pl.Int64),
                              trace_file=pl.col("pid").replace_strict(files, default=None, return_dtype=pl.String))


def process_table(layout: Layout) -> pl.DataFrame:
    return layout.processes.select(list(PROCESS_SCHEMA))


def resolved_paths(layout: Layout, rank: np.ndarray, file_code: np.ndarray) -> pl.DataFrame:
    """(rank, file code) -> path and file_id: the FH metadata's name, relative names joined to the process's
    working directory; a hash no metadata event names stays as `<file HASH>`."""
    pairs = pl.DataFrame({"rank": rank, "file": file_code}).filter(pl.col("file") >= 0).unique()
    cwd = dict(zip(layout.processes["rank"].to_list(), layout.processes["_cwd"].to_list()))
    names = []
    for r, code in pairs.iter_rows():
        h = layout.strings[code]
        name = layout.files.get(h)
        if name is None:
            names.append(f"<file {h}>")
            continue
        base = cwd.get(r)
        if base and not name.startswith(("/", "<")) and ":[" not in name:
            name = os.path.normpath(os.path.join(base, name))
        names.append(name)
    return pairs.with_columns(path=pl.Series(names, dtype=pl.String),
                              file_id=pl.Series([file_id(n) for n in names], dtype=pl.UInt64))


def io_frame(layout: Layout) -> pl.DataFrame:
    """Every POSIX/STDIO call with its rank, times, file and (for reads and writes) offset and its source;
    `kind` kept for the counters. In (rank, start, id) order; `seq` numbers each rank's calls."""
    io = layout.raw.io
    if not len(io.get("ts", ())):
        return pl.DataFrame(schema={**CALL_SCHEMA, "kind": pl.UInt8})
    rank = layout.ranks(io["pid"], io["host"])
    key = io["file"] * 2 + io["stdio"]
    seq = np.where(io["id"] == NA, np.arange(len(rank)), io["id"])
    offset, source = _native.dftracer_positions(rank, key, io["ts"], seq, io["kind"], io["bytes"], io["offset"],
                                                io["ret"], io["whence"])
    start = layout.seconds(io["ts"])
    frame = pl.DataFrame({
        "rank": rank, "tid": _nullable(io["tid"]), "_order": seq,
        "layer": pl.Series(io["stdio"]).replace_strict({0: "POSIX", 1: "STDIO"}, return_dtype=LAYER),
        "func": pl.Series(np.asarray(layout.strings + [""], dtype=object)[io["func"]], dtype=pl.String),
        "_file": io["file"], "start": start, "end": layout.seconds(io["ts"] + io["dur"]),
        "ret": _nullable(io["ret"]), "bytes": _nullable(io["bytes"]), "offset": _nullable(offset),
        "offset_source": pl.Series(source.astype(np.int64)).replace_strict(
            {0: None, **{i + 1: s for i, s in enumerate(OFFSET_SOURCES)}}, return_dtype=OFFSET_SOURCE),
        "whence": _nullable(io["whence"]), "fd": _nullable(io["fd"]), "kind": pl.Series(io["kind"], dtype=pl.UInt8),
    })
    names = resolved_paths(layout, rank, io["file"])
    frame = (frame.join(names.rename({"file": "_file"}), on=["rank", "_file"], how="left")
             .sort("rank", "start", "_order", maintain_order=True)
             .with_columns(seq=pl.int_range(pl.len(), dtype=pl.Int64).over("rank")))
    return frame.select(*CALL_SCHEMA, "kind")


def calls_table(io: pl.DataFrame) -> pl.DataFrame:
    return io.select(list(CALL_SCHEMA))


def segments_table(io: pl.DataFrame, layout: Layout) -> pl.DataFrame:
    """The POSIX reads and writes that moved bytes (or tried: 0 at end of file) as DXT_POSIX segments; an
    offset the trace cannot give is -1 (the analyses' 'not recorded')."""
    kind = pl.col("kind")
    data = io.filter((pl.col("layer") == "POSIX") & kind.is_in(READS + WRITES) & pl.col("bytes").is_not_null()
                     & pl.col("file_id").is_not_null())
    if data.is_empty():
        return pl.DataFrame(schema={**SEGMENT_SCHEMA, "pthread_id": pl.UInt64})
    hosts = dict(zip(layout.processes["rank"].to_list(), layout.processes["host"].fill_null("").to_list()))
    return data.select(
        pl.lit("DXT_POSIX", dtype=MODULE).alias("module"),
        "file_id", "rank",
        pl.col("rank").replace_strict(hosts, return_dtype=pl.String).cast(pl.Categorical).alias("hostname"),
        pl.when(kind.is_in(READS)).then(pl.lit("read")).otherwise(pl.lit("write")).cast(OP).alias("op"),
        pl.col("offset").fill_null(-1), pl.col("bytes").alias("length"), "start", "end",
        pl.col("tid").fill_null(0).cast(pl.UInt64).alias("pthread_id"),
    )


def spans_table(layout: Layout) -> pl.DataFrame:
    """One row per application event: its rank, thread, category, name, times, epoch and step, the span that
    encloses it in its thread (`parent`, a span_id) and its depth there, its other arguments as JSON."""
    sp = layout.raw.spans
    if not len(sp.get("ts", ())):
        return pl.DataFrame(schema=SPAN_SCHEMA)
    rank = layout.ranks(sp["pid"], sp["host"])
    names = np.asarray(layout.strings + [""], dtype=object)
    frame = pl.DataFrame({
        "rank": rank, "tid": _nullable(sp["tid"]), "_ts": sp["ts"], "_end": sp["ts"] + sp["dur"],
        "_id": sp["id"], "cat": pl.Series(names[sp["cat"]], dtype=pl.String),
        "name": pl.Series(names[sp["name"]], dtype=pl.String),
        "epoch": _nullable(sp["epoch"]), "step": _nullable(sp["step"]),
        "args": pl.Series(sp["args"], dtype=pl.String),
    }).sort("rank", "_ts", "_id", maintain_order=True).with_columns(span_id=pl.int_range(pl.len(), dtype=pl.Int64))
    thread = frame.select(pl.struct("rank", pl.col("tid").fill_null(-1)).rank("dense").cast(pl.Int64)).to_series()
    parent, depth = _native.dftracer_nest(thread.to_numpy(), frame["_ts"].to_numpy(), frame["_end"].to_numpy())
    return frame.with_columns(
        start=pl.Series(layout.seconds(frame["_ts"].to_numpy())),
        end=pl.Series(layout.seconds(frame["_end"].to_numpy())),
        parent=pl.Series(parent).replace(-1, None), depth=pl.Series(depth, dtype=pl.Int32),
    ).select(list(SPAN_SCHEMA))
