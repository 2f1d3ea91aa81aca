"""The DXT trace as a Perfetto trace (`.pftrace`, protobuf) or a Chrome JSON trace (`.json`).

One process per rank (`rank N @ host`, pid N + 1: Perfetto reserves pid 0), one track per layer under it
(MPI-IO above POSIX), one slice per operation named by its kind (`write`/`read`) with file, offset, length and
Lustre OSTs as arguments; the job's facts are trace metadata and the arguments of a `job` slice over the run;
the cross-rank conflicts (analysis/conflicts.py) are slices on a track group of their own. A trace with
application spans (DFTracer) has them as slices on a `spans` track per process and thread, above its I/O.
Slices on one track must nest, so operations of one rank and layer that overlap in time (threads,
asynchronous I/O) are spread over extra tracks (`POSIX #2`, ...), as few as the overlap needs.

The protobuf is written column-wise with numpy (`protobuf.py`) rather than through the `perfetto` package's
TraceProtoBuilder, which builds one Python message per packet (≈5 µs per operation: ≈8 s for 1.6 M, past
the 5 s budget, and it would make `perfetto` and `protobuf` runtime dependencies); the tests read the file
back with that package's schema.
"""
from __future__ import annotations

import heapq
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ..model.darshan import DXT_VIEW_ORDER
from ..output import whole_file
from . import protobuf as pb
from .export import conflicts_table
from .html.filters import Filters, apply_filters, window_and_ranks

LAYERS = DXT_VIEW_ORDER  # DXT module -> layer name, in the order their tracks are shown
BROWSER_LIMIT = 1 << 30  # past this the UI in a browser tab runs out of memory; trace_processor --httpd copes
SEQUENCE = 1  # trusted_packet_sequence_id of every packet (one writer)
ARG_NAMES = ("file", "offset", "length", "osts")
CONFLICTS_TRACK = "cross-rank conflicts (POSIX)"
CHUNK_EVENTS = 1 << 19
SPAN_UUID = 1 << 40  # uuids of span tracks (and of processes with spans but no I/O): apart from the others
SPANS_ORDER = -1_000_000  # sibling order of span tracks: above every layer's
# Perfetto proto field numbers (protos/perfetto/trace/...): TracePacket, TrackEvent, DebugAnnotation, ...
PACKET, P_TIMESTAMP, P_SEQUENCE, P_TRACK_EVENT, P_INTERNED, P_FLAGS, P_CHROME, P_TRACK = 1, 8, 10, 11, 12, 13, 5, 60
E_TYPE, E_TRACK, E_NAME_IID, E_ANNOTATION, E_NAME = 9, 11, 10, 4, 23
A_NAME_IID, A_INT, A_STRING, A_STRING_IID = 1, 4, 6, 17
SLICE_BEGIN, SLICE_END = 1, 2
CLEARED, NEEDS_STATE = 1, 2
EXPLICIT_ORDER = 3


@dataclass
class TraceOps:
    ops: pl.DataFrame  # one row per operation: track, op, file_id, offset, length, start_ns, end_ns, osts
    tracks: pl.DataFrame  # track, rank, module, lane, name
    ranks: pl.DataFrame  # rank, hostname, uuid
    names: dict  # file_id -> file name
    job: dict
    conflicts: pl.DataFrame | None = None  # conflict_slices(): one slice per merged conflict range
    spans: pl.DataFrame | None = None  # span_slices(): the application's spans (DFTracer), on their tracks


def trace_ops(log, filters: Filters = Filters(), conflicts: bool = True) -> TraceOps:
    """The operations to draw, each on a track where slices never overlap (times in ns from job start), and
    (conflicts=True) the cross-rank conflicts among them, as slices on tracks of their own."""
    trace = _trace_ops(log, filters)
    if conflicts and log.has_dxt:
        trace.conflicts = conflict_slices(conflicts_table(log, apply_filters(log.segments, log.files, filters)))
    spans = getattr(log, "spans", None)
    if spans is not None and spans.height:
        trace.spans = span_slices(spans.filter(window_and_ranks(filters)))
    return trace


def span_slices(spans: pl.DataFrame) -> pl.DataFrame:
    """The spans with times in ns and a lane each: spans of one process and thread nest (DFTracer's `depth`);
    one that overlaps another without nesting goes to a further lane, where it does nest."""
    s = (spans.select("rank", "tid", "cat", "name", "epoch", "step",
                      (pl.col("start") * 1e9).round().cast(pl.Int64).clip(lower_bound=0).alias("start_ns"),
                      (pl.col("end") * 1e9).round().cast(pl.Int64).clip(lower_bound=0).alias("end_ns"))
         .with_columns(pl.max_horizontal("start_ns", "end_ns").alias("end_ns"))
         .sort("rank", "tid", "start_ns", pl.col("end_ns"), descending=[False, False, False, True]))
    lanes, stacks, thread = [], [], None
    for rank, tid, t0, t1 in s.select("rank", "tid", "start_ns", "end_ns").iter_rows():
        if (rank, tid) != thread:
            thread, stacks = (rank, tid), []
        for lane, stack in enumerate(stacks):  # the first lane where the span nests in the open ones
            while stack and stack[-1] <= t0 and not (stack[-1] == t0 == t1):
                stack.pop()
            if not stack or t1 <= stack[-1]:
                break
        else:
            stacks.append([])
            lane = len(stacks) - 1
        stacks[lane].append(t1)
        lanes.append(lane)
    return s.with_columns(pl.Series("lane", lanes, dtype=pl.Int64))


def _trace_ops(log, filters: Filters) -> TraceOps:
    seg = apply_filters(log.segments, log.files, filters) if log.has_dxt else pl.DataFrame()
    if seg.is_empty():
        empty = pl.DataFrame(schema={"track": pl.Int64, "op": pl.String, "file_id": pl.UInt64, "offset": pl.Int64,
                                     "length": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64,
                                     "osts": pl.String})
        return TraceOps(empty, pl.DataFrame(schema={"track": pl.Int64, "rank": pl.Int64, "module": pl.String,
                                                    "lane": pl.Int64, "name": pl.String}),
                        pl.DataFrame(schema={"rank": pl.Int64, "hostname": pl.String, "uuid": pl.Int64}),
                        {}, log.job)
    osts = (pl.col("osts").cast(pl.List(pl.String)).list.join(" ") if "osts" in seg.columns
            else pl.lit(None, dtype=pl.String))
    # sorted on the module's enum code (MPI-IO is code 1, POSIX 0: the track order is set apart)
    ops = (seg.lazy().select(
        "rank", "module", "op", "file_id", "offset", "length",
        # protobuf timestamps are unsigned: a (rare) negative DXT time is drawn at the job start
        (pl.col("start") * 1e9).round().cast(pl.Int64).clip(lower_bound=0).alias("start_ns"),
        (pl.col("end") * 1e9).round().cast(pl.Int64).clip(lower_bound=0).alias("end_ns"), osts.alias("osts"))
        .with_columns(pl.max_horizontal("start_ns", "end_ns").alias("end_ns"))
        .sort("rank", "module", "start_ns", "end_ns").collect())
    ops = ops.with_columns(pl.Series("lane", assign_lanes(ops)))
    hosts = log.dxt_records.group_by("rank").agg(pl.col("hostname").first())
    ranks = (ops.select(pl.col("rank").unique().sort()).join(hosts, on="rank", how="left")
             .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("uuid")))
    order = pl.col("module").cast(pl.String).replace_strict(list(LAYERS), list(range(len(LAYERS))),
                                                            return_dtype=pl.Int64)
    tracks = (ops.select("rank", "module", "lane").unique().sort("rank", order, "lane")
              .with_columns(pl.int_range(ranks.height + 1, ranks.height + 1 + pl.len(), dtype=pl.Int64).alias("track"),
                            (pl.col("module").cast(pl.String).replace_strict(LAYERS)
                             + pl.when(pl.col("lane") > 0).then(pl.format(" #{}", pl.col("lane") + 1))
                             .otherwise(pl.lit(""))).alias("name")))
    ops = ops.join(tracks.select("rank", "module", "lane", "track"), on=["rank", "module", "lane"], how="left")
    return TraceOps(ops.select("track", pl.col("op").cast(pl.String), "file_id", "offset", "length", "start_ns",
                               "end_ns", "osts"),
                    tracks.select("track", "rank", pl.col("module").cast(pl.String), "lane", "name"),
                    ranks.select("rank", "hostname", "uuid"), log.file_names(), log.job)


def assign_lanes(ops: pl.DataFrame) -> np.ndarray:
    """Lane of each operation (sorted by rank, module, start): 0 unless it overlaps an earlier one of the same
    rank and layer, then the lowest lane free at its start (greedy interval partitioning: fewest lanes)."""
    busy = ops.select((pl.col("start_ns") < pl.col("end_ns").cum_max().shift(1).over("rank", "module"))
                      .fill_null(False)).to_series().to_numpy()
    lanes = np.zeros(ops.height, dtype=np.int64)
    if not busy.any():
        return lanes
    groups = ops.select(pl.struct("rank", "module").rank("dense").alias("g"))["g"].to_numpy()
    start, end = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
    bounds = np.flatnonzero(np.diff(groups)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(groups)]):
        if not busy[lo:hi].any():
            continue
        free_at, spare, used = [], [], 0  # heap of (end, lane) of running slices; heap of free lanes
        for i in range(lo, hi):
            while free_at and free_at[0][0] <= start[i]:
                heapq.heappush(spare, heapq.heappop(free_at)[1])
            lane = heapq.heappop(spare) if spare else used
            used = max(used, lane + 1)
            lanes[i] = lane
            heapq.heappush(free_at, (end[i], lane))
    return lanes


MAX_CONFLICT_SLICES = 100_000


def conflict_slices(table: pl.DataFrame) -> pl.DataFrame:
    """The conflicts table (views/export.conflicts_table) as slices over each range's time window, named by
    kind and timing, on as many lanes as their overlap in time needs (the most conflicting ranges first)."""
    c = (table.sort("pairs", descending=True).head(MAX_CONFLICT_SLICES)
         .with_columns((pl.col("start") * 1e9).round().cast(pl.Int64).clip(lower_bound=0).alias("start_ns"),
                       (pl.col("end") * 1e9).round().cast(pl.Int64).clip(lower_bound=0).alias("end_ns"),
                       pl.format("{} ({})", "kind", _timing(table)).alias("name"),
                       pl.col("ranks").cast(pl.List(pl.String)).list.join(" ").alias("ranks"),
                       pl.lit(0).alias("rank"), pl.lit("").alias("module"))
         .with_columns(pl.max_horizontal("start_ns", "end_ns").alias("end_ns"))
         .sort("start_ns", "end_ns"))
    c = c.with_columns(pl.Series("lane", assign_lanes(c)))
    return c.select("lane", "name", "start_ns", "end_ns", "file", "offset", "end_offset", "pairs", "ranks")


def _timing(table: pl.DataFrame) -> pl.Expr:
    """'ordered', or for a Recorder trace's table 'ordered; synchronised under POSIX, commit' (the models
    whose synchronised_<model> column is true), 'ordered; unsynchronised', 'ordered; not classified'."""
    models = [c for c in table.columns if c.startswith("synchronised_")]
    if not models:
        return pl.col("timing")
    under = pl.concat_str([pl.when(pl.col(c)).then(pl.lit(c.removeprefix("synchronised_"))) for c in models],
                          separator=", ", ignore_nulls=True)
    verdict = (pl.when(pl.col(models[0]).is_null()).then(pl.lit("not classified"))
               .when(under == "").then(pl.lit("unsynchronised"))
               .otherwise(pl.lit("synchronised under ") + under))
    return pl.format("{}; {}", "timing", verdict)


def estimate_bytes(n_ops: int, fmt: str) -> int:
    """Rough size of the written trace, on the high side (scale_1p6M: 62 B per operation in protobuf, 185 B in
    JSON; longer offsets and OST lists make more)."""
    return n_ops * (80 if fmt == "perfetto" else 230)


# --- protobuf -------------------------------------------------------------------------------------------

def write_perfetto(trace: TraceOps, path: Path) -> int:
    """Write `.pftrace`; returns the number of operations written."""
    ops = trace.ops
    files = ops["file_id"].unique().sort()
    osts = ops["osts"].drop_nulls().unique().sort()
    strings = [trace.names.get(int(f), f"<record {int(f):016x}>") for f in files] + osts.to_list()
    with whole_file(path) as tmp, open(tmp, "wb") as out:
        out.write(_packet(_interned(strings)))
        for packet in _descriptors(trace):
            out.write(_packet(packet))
        out.write(_packet(_metadata(trace.job)))
        job_begin, job_end = _job_slice(trace.job, job_track(trace))
        out.write(_packet(job_begin))
        _write_events(out, ops, files, osts)
        out.write(_packet(job_end))
        for packet in _conflict_packets(trace):
            out.write(_packet(packet))
        for packet in _span_packets(trace):
            out.write(_packet(packet))
    return ops.height


def _packet(body: bytes) -> bytes:
    return pb.field_bytes(PACKET, body)


def _interned(strings: list) -> bytes:
    """The first packet: clears the sequence's state and interns event names, argument names and strings
    (files, then OST lists; their iids are 1 + their index)."""
    data = b"".join(pb.field_bytes(2, pb.field_varint(1, i + 1) + pb.field_bytes(2, n))
                    for i, n in enumerate(("write", "read", "job")))
    data += b"".join(pb.field_bytes(3, pb.field_varint(1, i + 1) + pb.field_bytes(2, n))
                     for i, n in enumerate(ARG_NAMES))
    data += b"".join(pb.field_bytes(29, pb.field_varint(1, i + 1) + pb.field_bytes(2, s)) for i, s in enumerate(strings))
    return (pb.field_varint(P_SEQUENCE, SEQUENCE) + pb.field_varint(P_FLAGS, CLEARED | NEEDS_STATE)
            + pb.field_bytes(P_INTERNED, data))


def _descriptors(trace: TraceOps):
    order = {m: i for i, m in enumerate(LAYERS)}
    for rank, host, uuid in trace.ranks.iter_rows():
        process = pb.field_varint(1, rank + 1) + pb.field_bytes(6, f"rank {rank} @ {host}")
        yield pb.field_bytes(P_TRACK, pb.field_varint(1, uuid) + pb.field_bytes(3, process)
                             + pb.field_varint(11, EXPLICIT_ORDER))
    parents = dict(zip(trace.ranks["rank"].to_list(), trace.ranks["uuid"].to_list()))
    for track, rank, module, lane, name in trace.tracks.iter_rows():
        yield pb.field_bytes(P_TRACK, pb.field_varint(1, track) + pb.field_varint(5, parents[rank])
                             + pb.field_bytes(2, name) + pb.field_varint(12, order[module] * 1_000_000 + lane))
    yield pb.field_bytes(P_TRACK, pb.field_varint(1, job_track(trace)) + pb.field_bytes(2, "job"))


def _conflict_packets(trace: TraceOps):
    """A 'cross-rank conflicts' track group under the ranks: one track per lane, one slice per range."""
    c = trace.conflicts
    if c is None or c.is_empty():
        return
    group = job_track(trace) + 1
    yield pb.field_bytes(P_TRACK, pb.field_varint(1, group) + pb.field_bytes(2, CONFLICTS_TRACK))
    for lane in range(int(c["lane"].max()) + 1):
        name = "conflicts" if lane == 0 else f"conflicts #{lane + 1}"
        yield pb.field_bytes(P_TRACK, pb.field_varint(1, group + 1 + lane) + pb.field_varint(5, group)
                             + pb.field_bytes(2, name) + pb.field_varint(12, lane))
    common = pb.field_varint(P_SEQUENCE, SEQUENCE) + pb.field_varint(P_FLAGS, NEEDS_STATE)
    for lane, name, t0, t1, file, offset, end_offset, pairs, ranks in c.iter_rows():
        track = pb.field_varint(E_TRACK, group + 1 + lane)
        args = b"".join(pb.field_bytes(E_ANNOTATION, pb.field_bytes(10, k) + (
            pb.field_varint(A_INT, v) if isinstance(v, int) else pb.field_bytes(A_STRING, str(v))))
            for k, v in (("file", file), ("offset", offset), ("end_offset", end_offset), ("pairs", pairs),
                         ("ranks", ranks)))
        yield pb.field_varint(P_TIMESTAMP, t0) + common + pb.field_bytes(
            P_TRACK_EVENT, pb.field_varint(E_TYPE, SLICE_BEGIN) + track + pb.field_bytes(E_NAME, name) + args)
        yield pb.field_varint(P_TIMESTAMP, t1) + common + pb.field_bytes(
            P_TRACK_EVENT, pb.field_varint(E_TYPE, SLICE_END) + track)


def span_tracks(trace: TraceOps) -> pl.DataFrame:
    """One track per (rank, thread, lane) of the spans: uuid, rank, tid, lane, name (`spans`, with the thread
    when the process has spans in several, `#2`... for a further lane)."""
    tracks = trace.spans.select("rank", "tid", "lane").unique().sort("rank", "tid", "lane")
    threads = pl.col("tid").n_unique().over("rank")
    return tracks.with_columns(
        pl.int_range(SPAN_UUID, SPAN_UUID + pl.len(), dtype=pl.Int64).alias("uuid"),
        (pl.lit("spans") + pl.when(threads > 1).then(pl.format(" (thread {})", "tid")).otherwise(pl.lit(""))
         + pl.when(pl.col("lane") > 0).then(pl.format(" #{}", pl.col("lane") + 1)).otherwise(pl.lit("")))
        .alias("name"))


def span_args(cat, epoch, step) -> list:
    return [(k, v) for k, v in (("cat", cat), ("epoch", epoch), ("step", step)) if v is not None]


def _span_packets(trace: TraceOps):
    """Span tracks under their process (a process of its own for a rank with spans and no I/O), and per
    track its slices: begin and end packets in nesting order (a track's packets are in time order)."""
    if trace.spans is None or trace.spans.is_empty():
        return
    tracks = span_tracks(trace)
    parents = dict(zip(trace.ranks["rank"].to_list(), trace.ranks["uuid"].to_list()))
    for i, rank in enumerate(sorted(set(tracks["rank"].to_list()) - set(parents))):
        parents[rank] = SPAN_UUID + tracks.height + i
        process = pb.field_varint(1, rank + 1) + pb.field_bytes(6, f"rank {rank}")
        yield pb.field_bytes(P_TRACK, pb.field_varint(1, parents[rank]) + pb.field_bytes(3, process)
                             + pb.field_varint(11, EXPLICIT_ORDER))
    for rank, tid, lane, uuid, name in tracks.iter_rows():
        yield pb.field_bytes(P_TRACK, pb.field_varint(1, uuid) + pb.field_varint(5, parents[rank])
                             + pb.field_bytes(2, name) + pb.field_varint(12, SPANS_ORDER + lane))
    common = pb.field_varint(P_SEQUENCE, SEQUENCE) + pb.field_varint(P_FLAGS, NEEDS_STATE)
    rows = trace.spans.join(tracks.select("rank", "tid", "lane", "uuid"), on=["rank", "tid", "lane"])
    rows = rows.sort("uuid", "start_ns", "end_ns", descending=[False, False, True])
    open_, track = [], None

    def end(uuid, t1):
        return pb.field_varint(P_TIMESTAMP, t1) + common + pb.field_bytes(
            P_TRACK_EVENT, pb.field_varint(E_TYPE, SLICE_END) + pb.field_varint(E_TRACK, uuid))

    for uuid, name, cat, epoch, step, t0, t1 in rows.select("uuid", "name", "cat", "epoch", "step", "start_ns",
                                                            "end_ns").iter_rows():
        if uuid != track:
            yield from (end(track, e) for e in reversed(open_))
            open_, track = [], uuid
        while open_ and open_[-1] <= t0 and not (open_[-1] == t0 == t1):
            yield end(uuid, open_.pop())
        args = b"".join(pb.field_bytes(E_ANNOTATION, pb.field_bytes(10, k) + (
            pb.field_varint(A_INT, v) if isinstance(v, int) else pb.field_bytes(A_STRING, str(v))))
            for k, v in span_args(cat, epoch, step))
        yield pb.field_varint(P_TIMESTAMP, t0) + common + pb.field_bytes(
            P_TRACK_EVENT, pb.field_varint(E_TYPE, SLICE_BEGIN) + pb.field_varint(E_TRACK, uuid)
            + pb.field_bytes(E_NAME, name) + args)
        open_.append(t1)
    yield from (end(track, e) for e in reversed(open_))


def job_track(trace: TraceOps) -> int:
    return trace.ranks.height + trace.tracks.height + 1


def job_facts(job: dict) -> dict:
    keys = ("exe", "jobid", "uid", "nprocs", "start_time", "end_time", "run_time", "log_version", "lib_version")
    facts = {k: job[k] for k in keys if job.get(k) not in (None, "")}
    facts.update({f"metadata.{k}": v for k, v in (job.get("metadata") or {}).items()})
    return facts


def _metadata(job: dict) -> bytes:
    """The job's facts as Chrome metadata entries (the trace processor's `metadata` table)."""
    entries = b""
    for name, value in job_facts(job).items():
        body = pb.field_bytes(1, name)
        if isinstance(value, int) and not isinstance(value, bool):
            body += pb.field_varint(4, value)
        else:
            body += pb.field_bytes(2, str(value))
        entries += pb.field_bytes(2, body)
    return pb.field_varint(P_SEQUENCE, SEQUENCE) + pb.field_bytes(P_CHROME, entries)


def _job_slice(job: dict, track: int) -> list:
    """The begin and end packets of a slice over the run carrying the job facts."""
    notes = b"".join(pb.field_bytes(E_ANNOTATION, pb.field_bytes(10, k) + pb.field_bytes(A_STRING, str(v)))
                     for k, v in job_facts(job).items())
    end = int(round(float(job.get("run_time") or 0) * 1e9))
    common = pb.field_varint(P_SEQUENCE, SEQUENCE) + pb.field_varint(P_FLAGS, NEEDS_STATE)
    begin = (pb.field_varint(P_TIMESTAMP, 0) + common + pb.field_bytes(
        P_TRACK_EVENT, pb.field_varint(E_TYPE, SLICE_BEGIN) + pb.field_varint(E_TRACK, track)
        + pb.field_varint(E_NAME_IID, 3) + notes))
    finish = (pb.field_varint(P_TIMESTAMP, end) + common + pb.field_bytes(
        P_TRACK_EVENT, pb.field_varint(E_TYPE, SLICE_END) + pb.field_varint(E_TRACK, track)))
    return [begin, finish]


def _write_events(out, ops: pl.DataFrame, files: pl.Series, osts: pl.Series) -> None:
    """Begin and end packets of every slice, in time order (per track: begin, end, begin, ...)."""
    n = ops.height
    ts = np.empty(2 * n, dtype=np.int64)  # row 2i: begin of operation i, 2i + 1: its end
    ts[0::2], ts[1::2] = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
    order = np.argsort(ts, kind="stable")  # ops are sorted per track, so each track keeps its order
    op_row = order // 2
    begin = order % 2 == 0
    track = ops["track"].to_numpy()
    name = np.where(ops["op"].to_numpy() == "write", 1, 2)
    file_iid = np.searchsorted(files.to_numpy(), ops["file_id"].to_numpy()) + 1
    ost_text = ops["osts"]
    has_osts = ost_text.is_not_null().to_numpy()
    ost_iid = np.zeros(n, dtype=np.int64)
    if has_osts.any():
        ost_iid[has_osts] = (np.searchsorted(osts.to_numpy(), ost_text.filter(ost_text.is_not_null()).to_numpy())
                             + len(files) + 1)
    offset, length = ops["offset"].to_numpy(), ops["length"].to_numpy()
    for lo in range(0, 2 * n, CHUNK_EVENTS):
        sl = slice(lo, min(lo + CHUNK_EVENTS, 2 * n))
        rows, b = op_row[sl], begin[sl]
        out.write(_event_packets(ts[order[sl]], b, track[rows], name[rows], file_iid[rows], offset[rows],
                                 length[rows], ost_iid[rows], has_osts[rows] & b).tobytes())


def _event_packets(ts, begin, track, name, file_iid, offset, length, ost_iid, with_osts) -> np.ndarray:
    def annotation(arg, field, values, mask):
        return pb.message(E_ANNOTATION, [pb.const(pb.field_varint(A_NAME_IID, arg)),
                                         *pb.varint_field(field, values)], mask)

    event = [*pb.varint_field(E_TYPE, np.where(begin, SLICE_BEGIN, SLICE_END)),
             *pb.varint_field(E_TRACK, track),
             *pb.varint_field(E_NAME_IID, name, begin),
             annotation(1, A_STRING_IID, file_iid, begin),
             annotation(2, A_INT, offset, begin),
             annotation(3, A_INT, length, begin),
             annotation(4, A_STRING_IID, ost_iid, with_osts)]
    packet = [*pb.varint_field(P_TIMESTAMP, ts),
              pb.const(pb.field_varint(P_SEQUENCE, SEQUENCE) + pb.field_varint(P_FLAGS, NEEDS_STATE)),
              pb.message(P_TRACK_EVENT, event)]
    return pb.encode([pb.message(PACKET, packet)], len(ts))


# --- Chrome JSON ----------------------------------------------------------------------------------------

def write_chrome_json(trace: TraceOps, path: Path) -> int:
    """Chrome JSON: `X` events (ts/dur in µs) with `M` events naming processes and threads."""
    ops = trace.ops
    names = pl.DataFrame({"file_id": pl.Series(list(trace.names), dtype=pl.UInt64),
                          "file": list(trace.names.values())})
    pid = trace.tracks.select("track", (pl.col("rank") + 1).alias("pid"))
    events = (ops.lazy().join(pid.lazy(), on="track", how="left").join(names.lazy(), on="file_id", how="left")
              .select(pl.struct(
                  pl.col("op").alias("name"), pl.lit("io").alias("cat"), pl.lit("X").alias("ph"),
                  (pl.col("start_ns") / 1000).alias("ts"), ((pl.col("end_ns") - pl.col("start_ns")) / 1000)
                  .alias("dur"), "pid", pl.col("track").alias("tid"),
                  pl.struct(pl.col("file").fill_null(pl.format("<record {}>", "file_id")), "offset", "length",
                            "osts").alias("args")).struct.json_encode().alias("e"))
              .collect()["e"])
    meta = []
    for rank, host, _ in trace.ranks.iter_rows():
        meta.append({"ph": "M", "name": "process_name", "pid": rank + 1, "args": {"name": f"rank {rank} @ {host}"}})
        meta.append({"ph": "M", "name": "process_sort_index", "pid": rank + 1, "args": {"sort_index": rank}})
    order = {m: i for i, m in enumerate(LAYERS)}
    for track, rank, module, lane, name in trace.tracks.iter_rows():
        meta.append({"ph": "M", "name": "thread_name", "pid": rank + 1, "tid": track, "args": {"name": name}})
        meta.append({"ph": "M", "name": "thread_sort_index", "pid": rank + 1, "tid": track,
                     "args": {"sort_index": order[module] * 1_000_000 + lane}})
    meta.extend(_conflict_events(trace))
    meta.extend(_span_events(trace))
    with whole_file(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        out.write('{"displayTimeUnit": "ns", "metadata": ')
        out.write(json.dumps(job_facts(trace.job), default=str, ensure_ascii=False))
        out.write(', "traceEvents": [\n')
        out.write(",\n".join(json.dumps(m, ensure_ascii=False) for m in meta))
        if len(events):
            out.write(",\n" if meta else "")
            out.write(",\n".join(events.to_list()))
        out.write("\n]}\n")
    return ops.height


def _span_events(trace: TraceOps) -> list:
    """Chrome JSON: the spans as `X` events on a thread per span track of their rank's process."""
    if trace.spans is None or trace.spans.is_empty():
        return []
    tracks = span_tracks(trace)
    out = []
    named = set(trace.ranks["rank"].to_list())
    for rank, tid, lane, uuid, name in tracks.iter_rows():
        if rank not in named:
            named.add(rank)
            out.append({"ph": "M", "name": "process_name", "pid": rank + 1, "args": {"name": f"rank {rank}"}})
        out.append({"ph": "M", "name": "thread_name", "pid": rank + 1, "tid": uuid, "args": {"name": name}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": rank + 1, "tid": uuid,
                    "args": {"sort_index": SPANS_ORDER + lane}})
    rows = trace.spans.join(tracks.select("rank", "tid", "lane", "uuid"), on=["rank", "tid", "lane"])
    for rank, uuid, name, cat, epoch, step, t0, t1 in rows.select("rank", "uuid", "name", "cat", "epoch", "step",
                                                                  "start_ns", "end_ns").iter_rows():
        out.append({"name": name, "cat": "span", "ph": "X", "ts": t0 / 1000, "dur": (t1 - t0) / 1000,
                    "pid": rank + 1, "tid": uuid, "args": dict(span_args(cat, epoch, step))})
    return out


def _conflict_events(trace: TraceOps) -> list:
    """Chrome JSON: the conflict slices in a process of their own (pid: one past the last rank's)."""
    c = trace.conflicts
    if c is None or c.is_empty():
        return []
    pid = (int(trace.ranks["rank"].max()) + 2) if trace.ranks.height else 1
    out = [{"ph": "M", "name": "process_name", "pid": pid, "args": {"name": CONFLICTS_TRACK}},
           {"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": -1}}]
    for lane, name, t0, t1, file, offset, end_offset, pairs, ranks in c.iter_rows():
        out.append({"name": name, "cat": "conflict", "ph": "X", "ts": t0 / 1000, "dur": (t1 - t0) / 1000,
                    "pid": pid, "tid": lane + 1, "args": {"file": file, "offset": offset, "end_offset": end_offset,
                                                          "pairs": pairs, "ranks": ranks}})
    return out
