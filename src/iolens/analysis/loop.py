"""The training loop of an AI job traced with its spans (DFTracer): which process runs the loop and where its
time goes (waiting for data, computing, checkpointing), what its data-loader workers did, and what each epoch read.

Spans are classed by DFTracer's AI categories (`dftracer.python.ai`: dataloader/fetch, compute/step,
checkpoint/capture, pipeline/epoch, data/item, ...), by their `cat` (and a `fetch` name in any category), and by
the module categories DLIO's own `Profile` (`dft_fn`) spans carry (dlio_benchmark's common/constants.py:
`data_loader`, `ai_framework`, `checkpoint`, `reader`, `dlio_benchmark`; names are `Class.method`):

    wait        the loop waits for a batch: `dataloader` spans (fetch, fetch.iter) and DLIO's `data_loader`
                `*.iter` ones (`dft_fn.iter`'s wait for the next item: `loop.iter`), not `*.block`/`*.yield`
                (the loop's own body between two items, which those iterators also record) nor a set-up
                (`*.init`, `__init__`, `worker_init`)
    compute     `compute` spans (forward, backward, step); DLIO's `ai_framework` `*.compute`
    checkpoint  `checkpoint` spans (capture, checkpoint.io.write, DLIO's save_checkpoint, save_state), not a
                restart or load, nor a set-up (`checkpoint.init`, `__init__`, the model tensors it allocates)
    pipeline    `pipeline` spans (epoch, train, evaluate, test); DLIO's `DLIOBenchmark._train`/`._eval`: the loop's
                extent
    produce     the same `dataloader` spans, `data` spans (item, preprocess), and DLIO's other `data_loader` spans
                (`TorchDataset.__getitem__`) and its `reader` spans in a worker: making a batch

The loop's processes are the main processes (no traced parent) with wait or compute spans; its workers the other
processes that read data. Times are seconds on the trace's clock; a process's nested spans of one kind count once
(their union).
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import polars as pl

KINDS = ("wait", "compute", "checkpoint", "pipeline", "produce")
# a file the interpreter or the runtime reads (imports, shared libraries, /proc): not the job's data
CODE_FILE = r"(\.(py|pyc|pyi|pth|so)(\.[0-9]+)*$)|(^/(proc|sys|dev)/)"
WAIT_EPSILON = 1e-3  # a wait shorter than this (s) is the queue's hand-over, not a wait for data


def span_kind(role: pl.Expr | None = None) -> pl.Expr:
    """The kind of each span (KINDS, or null), from `cat` and `name`; `role`: the process's role, whose
    `dataloader` spans are waits in the loop and production in a worker (without it: waits)."""
    cat, name = pl.col("cat").str.to_lowercase(), pl.col("name").str.to_lowercase()
    body = name.str.ends_with(".block") | name.str.ends_with(".yield")
    setup = name.str.ends_with(".init") | name.str.ends_with("__init__") | name.str.ends_with("worker_init")
    dlio_loader = cat == "data_loader"  # DLIO's MODULE_DATA_LOADER
    loader = (((cat == "dataloader") | name.str.starts_with("fetch") | (dlio_loader & name.str.ends_with(".iter")))
              & ~body & ~setup)
    in_loop = pl.lit(True) if role is None else role != "worker"
    not_written = name.str.contains(r"restart|load|init|get_tensor|madvise")  # a checkpoint read back, or set up
    return (pl.when(loader & in_loop).then(pl.lit("wait"))
            .when(loader | (((cat == "data") | ((dlio_loader | (cat == "reader")) & ~in_loop)) & ~body & ~setup))
            .then(pl.lit("produce"))
            .when((cat == "compute") | ((cat == "ai_framework") & name.str.ends_with("compute")))
            .then(pl.lit("compute"))
            .when((cat == "checkpoint") & ~not_written).then(pl.lit("checkpoint"))
            .when((cat == "pipeline") | ((cat == "dlio_benchmark") & name.str.contains(r"\._(train|eval)$")))
            .then(pl.lit("pipeline"))
            .otherwise(pl.lit(None, pl.String)))


def merged(intervals: pl.DataFrame, by: tuple = ("rank",), keep: tuple = ()) -> pl.DataFrame:
    """The union of the [start, end] intervals per group `by`: one row per run of overlapping intervals (start,
    end; `keep`: the first non-null value of these columns in the run), sorted by group and start."""
    by = list(by)
    if intervals.is_empty():
        return intervals.select(*by, "start", "end", *keep)
    prev = pl.col("end").cum_max().shift(1).over(by, order_by="start")
    runs = (intervals.sort(*by, "start")
            .with_columns(_new=(prev.is_null() | (pl.col("start") > prev)))
            .with_columns(_run=pl.col("_new").cum_sum().over(by, order_by="start")))
    return (runs.group_by(*by, "_run", maintain_order=True)
            .agg(pl.col("start").min(), pl.col("end").max(), *(pl.col(k).drop_nulls().first() for k in keep))
            .drop("_run").sort(*by, "start"))


def inside(ops: pl.DataFrame, intervals: pl.DataFrame, by: str = "rank") -> pl.DataFrame:
    """`ops` (by, start, end, ...) with `_in`: the row number of the merged interval of `intervals` (by, start,
    end; disjoint per group) that holds the operation whole, null where none does. In the order of `ops`."""
    if ops.is_empty() or intervals.is_empty():
        return ops.with_columns(_in=pl.lit(None, pl.UInt32))
    table = (intervals.select(by, pl.col("start").alias("_s"), pl.col("end").alias("_e")).with_row_index("_in")
             .cast({by: ops.schema[by]}).sort("_s"))
    found = (ops.with_row_index("_op").sort("start")
             .join_asof(table, left_on="start", right_on="_s", by=by, strategy="backward", check_sortedness=False))
    found = found.with_columns(pl.when(pl.col("_e") >= pl.col("end")).then(pl.col("_in")).alias("_in"))
    return found.sort("_op").drop("_op", "_s", "_e")


def clipped_length(intervals: pl.DataFrame, start: float, end: float) -> float:
    """The length of the part of disjoint `intervals` (start, end) inside [start, end]."""
    if intervals.is_empty():
        return 0.0
    return float(intervals.select((pl.min_horizontal("end", pl.lit(end)) - pl.max_horizontal("start", pl.lit(start)))
                                  .clip(lower_bound=0).sum()).item() or 0.0)


def _with_roles(processes: pl.DataFrame, spans: pl.DataFrame) -> pl.DataFrame:
    """The processes, their roles as the loop sees them. When the trace names no process's parent (DFTracer
    without metadata: its start events carry no `ppid`), every process is a root ("main"); then the processes
    that compute (or hold the pipeline's spans) run the loop and the others are taken as its workers, so that
    their fetches are production, not the loop's waits."""
    if processes.height < 2 or "ppid" not in processes.columns or processes["ppid"].null_count() < processes.height:
        return processes
    kind = spans.select("rank", kind=span_kind())
    loop = kind.filter(pl.col("kind").is_in(["compute", "pipeline"]))["rank"].unique().to_list()
    if not loop:
        return processes
    return processes.with_columns(role=pl.when(pl.col("rank").is_in(loop)).then(pl.lit("main"))
                                  .otherwise(pl.lit("worker")))


class Loop:
    """The training loop of a log with spans (`Loop.of(log)`, None without spans or without a loop)."""

    def __init__(self, processes: pl.DataFrame, spans: pl.DataFrame, calls: pl.DataFrame):
        self.processes = _with_roles(processes, spans)
        self.calls = calls
        role = self.processes.select("rank", pl.col("role").cast(pl.String))
        self.spans = (spans.join(role, on="rank", how="left")
                      .with_columns(kind=span_kind(pl.col("role").fill_null("main")))
                      .filter(pl.col("kind").is_not_null()))

    @staticmethod
    def of(log) -> "Loop | None":
        """The loop of `log` when it has spans (a DFTracer trace) with a loop in them, else None."""
        spans = getattr(log, "spans", None)
        calls = getattr(log, "calls", None)
        if not isinstance(spans, pl.DataFrame) or spans.is_empty() or not isinstance(calls, pl.DataFrame):
            return None
        loop = Loop(log.processes, spans, calls)
        return loop if loop.ranks else None

    # --- the loop's processes and their windows --------------------------------------------------
    @cached_property
    def ranks(self) -> list:
        """The processes running the loop: main processes with wait or compute spans."""
        main = set(self.processes.filter(pl.col("role").cast(pl.String) == "main")["rank"].to_list())
        mine = self.spans.filter(pl.col("kind").is_in(["wait", "compute"]))["rank"].unique().sort().to_list()
        return [r for r in mine if r in main]

    def _of(self, kind: str, ranks=None) -> pl.DataFrame:
        ranks = self.ranks if ranks is None else ranks
        return self.spans.filter((pl.col("kind") == kind) & pl.col("rank").is_in(ranks))

    @cached_property
    def windows(self) -> pl.DataFrame:
        """Per loop process: rank, start, end, time: the union of its pipeline spans (epoch, train, ...), else
        from its first to its last wait, compute or checkpoint span."""
        pipe = merged(self._of("pipeline"))
        rows = []
        for rank in self.ranks:
            mine = pipe.filter(pl.col("rank") == rank)
            if mine.height:
                rows.append((rank, float(mine["start"].min()), float(mine["end"].max()),
                             float((mine["end"] - mine["start"]).sum())))
                continue
            body = self.spans.filter((pl.col("rank") == rank) & pl.col("kind").is_in(["wait", "compute",
                                                                                      "checkpoint"]))
            s, e = float(body["start"].min()), float(body["end"].max())
            rows.append((rank, s, e, e - s))
        return pl.DataFrame(rows, schema={"rank": pl.Int64, "start": pl.Float64, "end": pl.Float64,
                                          "time": pl.Float64}, orient="row")

    @cached_property
    def epochs(self) -> pl.DataFrame:
        """The epochs: epoch, start, end (the loop's pipeline spans carrying an epoch, over its processes)."""
        pipe = self._of("pipeline").filter(pl.col("epoch").is_not_null())
        if pipe.is_empty():  # the epochs the loop's spans name, from their first to their last span
            pipe = self.spans.filter(pl.col("rank").is_in(self.ranks) & pl.col("epoch").is_not_null())
        return (pipe.group_by("epoch").agg(pl.col("start").min(), pl.col("end").max()).sort("epoch"))

    def _epoch_at(self, frame: pl.DataFrame, column: str = "start") -> pl.DataFrame:
        """`frame` with `_ep`: each row's epoch from the epoch windows, by `column` (a time); null outside."""
        ep = self.epochs.select(pl.col("start").alias("_es"), pl.col("end").alias("_ee"), pl.col("epoch").alias("_ep"))
        if ep.is_empty():
            return frame.with_columns(_ep=pl.lit(None, pl.Int64))
        return (frame.with_row_index("_o").sort(column)
                .join_asof(ep.sort("_es"), left_on=column, right_on="_es", strategy="backward",
                           check_sortedness=False)
                .with_columns(pl.when(pl.col(column) <= pl.col("_ee")).then(pl.col("_ep")).alias("_ep"))
                .sort("_o").drop("_o", "_es", "_ee"))

    # --- waits ----------------------------------------------------------------------------------
    @cached_property
    def waits(self) -> pl.DataFrame:
        """One row per wait of the loop for a batch: rank, start, end, time, epoch, step, and what kind of wait:
        `startup` (the loop's first batch: the workers starting), `respawn` (the first batch of a later epoch
        while new workers start), `steady` (any other). Waits are the loop's wait spans (their union, inside its
        window); a loop without them waits between two compute spans while a worker's read is in flight."""
        rows = []
        for w in self.windows.iter_rows(named=True):
            spans = self._of("wait", [w["rank"]])
            mine = (merged(spans, keep=("epoch", "step")) if spans.height else self._gaps(w["rank"]))
            mine = mine.with_columns(pl.max_horizontal("start", pl.lit(w["start"])).alias("start"),
                                     pl.min_horizontal("end", pl.lit(w["end"])).alias("end")
                                     ).filter(pl.col("end") > pl.col("start"))
            rows.append(mine.select("rank", "start", "end", pl.col("epoch").cast(pl.Int64), pl.col("step").cast(pl.Int64)))
        waits = pl.concat(rows) if rows else pl.DataFrame(schema={"rank": pl.Int64, "start": pl.Float64,
                                                                  "end": pl.Float64, "epoch": pl.Int64,
                                                                  "step": pl.Int64})
        waits = self._epoch_at(waits).with_columns(epoch=pl.coalesce("epoch", "_ep")).drop("_ep")
        waits = waits.sort("rank", "start").with_columns(time=pl.col("end") - pl.col("start"))
        first = pl.int_range(pl.len()).over("rank") == 0
        epoch_first = pl.int_range(pl.len()).over("rank", "epoch") == 0
        starts = self.processes.filter(pl.col("role").cast(pl.String) == "worker")["start"]
        respawn = pl.lit(False)
        if self.epochs.height > 1 and starts.len():
            # a worker started in this epoch, before this wait ended: the loader made its workers again
            ep = self.epochs.select("epoch", pl.col("start").alias("_es"))
            waits = waits.join(ep, on="epoch", how="left")
            started = [pl.lit(float(s)) for s in starts.to_list()]
            respawn = epoch_first & pl.any_horizontal([(s >= pl.col("_es")) & (s <= pl.col("end")) for s in started])
        waits = waits.with_columns(kind=pl.when(first).then(pl.lit("startup"))
                                   .when(respawn.fill_null(False)).then(pl.lit("respawn"))
                                   .otherwise(pl.lit("steady")))
        return waits.select("rank", "start", "end", "time", "epoch", "step", "kind")

    def _gaps(self, rank: int) -> pl.DataFrame:
        """The loop's gaps between two compute spans with a worker's read in flight and no checkpoint."""
        comp = merged(self._of("compute", [rank]))
        gaps = comp.select("rank", pl.col("end").alias("start"), pl.col("start").shift(-1).alias("end"),
                           pl.lit(None, pl.Int64).alias("epoch"), pl.lit(None, pl.Int64).alias("step")
                           ).filter(pl.col("end").is_not_null() & (pl.col("end") > pl.col("start")))
        if gaps.is_empty():
            return gaps
        ckpt = merged(self._of("checkpoint", [rank]))
        if ckpt.height:
            gaps = inside(gaps, ckpt).filter(pl.col("_in").is_null()).drop("_in")
        reads = self.data_reads.filter(pl.col("rank") != rank).select("start", "end").sort("start")
        if reads.is_empty():
            return gaps.clear()
        # a read in flight during the gap: one that started before it ended and ended after it started
        starts, ends = reads["start"].to_numpy(), reads["end"].cum_max().to_numpy()
        k = np.searchsorted(starts, gaps["end"].to_numpy(), side="left")  # reads started before the gap ends
        busy = (k > 0) & (ends[np.maximum(k - 1, 0)] > gaps["start"].to_numpy())
        return gaps.filter(pl.Series(busy))

    # --- checkpoints ----------------------------------------------------------------------------
    @cached_property
    def checkpoints(self) -> pl.DataFrame:
        """One row per checkpoint of the loop (its checkpoint spans' union): rank, start, end, time, epoch, step,
        and the calls inside: bytes (written), writes, fsyncs (fsync, fdatasync), write_time, fsync_time,
        io_time (every call), files (written), unsized (write calls the trace gives no size or return value:
        DFTracer without metadata)."""
        ckpt = merged(self._of("checkpoint"), keep=("epoch", "step")).with_row_index("checkpoint")
        if ckpt.is_empty():
            return ckpt.with_columns(time=pl.lit(0.0), bytes=pl.lit(0, pl.Int64), writes=pl.lit(0, pl.Int64),
                                     fsyncs=pl.lit(0, pl.Int64), write_time=pl.lit(0.0), fsync_time=pl.lit(0.0),
                                     io_time=pl.lit(0.0), files=pl.lit(0, pl.UInt32), unsized=pl.lit(0, pl.Int64))
        sized = "ret" in self.calls.columns  # (a call's return value: null when the trace gives no arguments)
        calls = self.calls.filter(pl.col("rank").is_in(self.ranks)).select(
            "rank", "func", "file_id", "start", "end", "bytes", *(["ret"] if sized else []))
        calls = inside(calls, ckpt).filter(pl.col("_in").is_not_null())
        write = pl.col("func").str.contains("write") & pl.col("bytes").is_not_null()
        unsized = (pl.col("func").str.contains("write") & pl.col("bytes").is_null() & pl.col("ret").is_null()
                   if sized else pl.lit(False))
        sync = pl.col("func").is_in(["fsync", "fdatasync", "fsync64"])
        dur = pl.col("end") - pl.col("start")
        per = calls.group_by("_in").agg(
            pl.col("bytes").filter(write).sum().alias("bytes"), write.sum().cast(pl.Int64).alias("writes"),
            sync.sum().cast(pl.Int64).alias("fsyncs"), dur.filter(write | unsized).sum().alias("write_time"),
            dur.filter(sync).sum().alias("fsync_time"), dur.sum().alias("io_time"),
            pl.col("file_id").filter(write).n_unique().alias("files"),
            unsized.sum().cast(pl.Int64).alias("unsized"))
        return (ckpt.join(per, left_on="checkpoint", right_on="_in", how="left")
                .with_columns(time=pl.col("end") - pl.col("start"))
                .with_columns(pl.col(c).fill_null(0) for c in ("bytes", "writes", "fsyncs", "write_time",
                                                               "fsync_time", "io_time", "files", "unsized"))
                .select("rank", "start", "end", "time", "epoch", "step", "bytes", "writes", "fsyncs",
                        "write_time", "fsync_time", "io_time", "files", "unsized"))

    # --- the workers and their data -------------------------------------------------------------
    @cached_property
    def _reads(self) -> pl.DataFrame:
        """Every read that returned (POSIX, STDIO), with the file's path."""
        return self.calls.filter(pl.col("func").str.contains("read") & pl.col("bytes").is_not_null()).select(
            "rank", "tid", "file_id", "path", "start", "end", "bytes", "offset")

    @cached_property
    def data_reads(self) -> pl.DataFrame:
        """The reads of the job's data: a worker's reads inside its production spans (all its reads of files that
        are no code, when it has none), and the loop's own reads inside its waits (data loaded in the loop);
        `span`: which production span or wait holds the read (null for a worker without spans), `span_epoch`:
        that span's epoch."""
        reads = self._reads
        producing = merged(self.spans.filter((pl.col("kind") == "produce") & ~pl.col("rank").is_in(self.ranks)),
                           keep=("epoch",))
        loop_waits = merged(self._of("wait"), keep=("epoch",))
        with_spans = set(producing["rank"].unique().to_list())
        holders = pl.concat([producing, loop_waits]) if loop_waits.height else producing
        held = inside(reads, holders)
        workers = self.processes.filter(pl.col("role").cast(pl.String) == "worker")["rank"].to_list()
        plain = (pl.col("rank").is_in([r for r in workers if r not in with_spans])
                 & ~pl.col("path").fill_null("").str.contains(CODE_FILE))
        epochs = holders.with_row_index("_in").select("_in", pl.col("epoch").cast(pl.Int64).alias("span_epoch"))
        return (held.filter(pl.col("_in").is_not_null() | plain).join(epochs, on="_in", how="left")
                .rename({"_in": "span"}))

    @cached_property
    def workers(self) -> pl.DataFrame:
        """One row per process making batches (a worker, or the loop itself when it reads its data in its waits):
        rank, label, start (the process's), batches (its production spans; null without), busy (their union, or
        its reading time without), read_time (reading: from the first to the last read of each file in each of its
        spans, the calls and the program's own work between them), read_calls_time (in the read calls alone),
        reads, bytes."""
        reads = self.data_reads
        producing = self.spans.filter((pl.col("kind") == "produce") & ~pl.col("rank").is_in(self.ranks))
        top = producing.filter(pl.col("parent").is_null() | ~pl.col("parent").is_in(producing["span_id"].implode()))
        batches = top.group_by("rank").agg(pl.len().cast(pl.Int64).alias("batches"))
        busy = merged(producing).group_by("rank").agg((pl.col("end") - pl.col("start")).sum().alias("busy"))
        per = reads.group_by("rank").agg((pl.col("end") - pl.col("start")).sum().alias("read_calls_time"),
                                         pl.len().cast(pl.Int64).alias("reads"), pl.col("bytes").sum().alias("bytes"))
        windows = pl.concat([
            reads.filter(pl.col("span").is_not_null()).group_by("rank", "span", "file_id")
            .agg(pl.col("start").min(), pl.col("end").max()).select("rank", "start", "end"),
            reads.filter(pl.col("span").is_null()).select("rank", "start", "end")])
        reading = merged(windows).group_by("rank").agg((pl.col("end") - pl.col("start")).sum().alias("read_time"))
        per = per.join(reading, on="rank", how="left")
        ranks = pl.concat([per.select("rank"), busy.select("rank")]).unique()
        out = (ranks.join(per, on="rank", how="left").join(busy, on="rank", how="left")
               .join(batches, on="rank", how="left")
               .join(self.processes.select("rank", "label", "start"), on="rank", how="left")
               .with_columns(pl.col("read_time", "read_calls_time").fill_null(0.0), pl.col("reads").fill_null(0),
                             pl.col("bytes").fill_null(0))
               .with_columns(busy=pl.coalesce("busy", "read_time")))
        return out.select("rank", "label", "start", "batches", "busy", "read_time", "read_calls_time", "reads",
                          "bytes").sort("rank")

    @cached_property
    def files(self) -> pl.DataFrame:
        """One row per data file: file_id, path, reads, bytes, read_time, ranks (how many processes read it);
        most read time first."""
        return (self.data_reads.group_by("file_id", "path")
                .agg(pl.len().cast(pl.Int64).alias("reads"), pl.col("bytes").sum(),
                     (pl.col("end") - pl.col("start")).sum().alias("read_time"), pl.col("rank").n_unique().alias("ranks"))
                .sort(["read_time", "path"], descending=[True, False]))

    @cached_property
    def epoch_reads(self) -> pl.DataFrame:
        """The data reads with their epoch: the enclosing span's (a worker's fetch says which epoch it serves),
        else the epoch window they fall in; null outside every epoch."""
        reads = self.data_reads
        known = reads.filter(pl.col("span_epoch").is_not_null()).with_columns(epoch=pl.col("span_epoch"))
        rest = self._epoch_at(reads.filter(pl.col("span_epoch").is_null())).rename({"_ep": "epoch"})
        return pl.concat([known, rest.cast({"epoch": pl.Int64})]).drop("span_epoch")

    # --- the loop's summary ---------------------------------------------------------------------
    @cached_property
    def summary(self) -> dict:
        """The loop over its processes: loop_time, waits (count), wait_time, startup_wait, respawn_wait,
        steady_wait, compute_time, checkpoint_time, checkpoints, steps (batches waited for), epochs,
        other_io_time (the loop's own calls outside its waits and checkpoints), io_wait (what the loop waits
        for I/O after its start-up: steady and respawn waits, checkpoints, its other I/O)."""
        win = self.windows
        waits, ckpt = self.waits, self.checkpoints
        loop_time = float(win["time"].sum())
        by_kind = dict(waits.group_by("kind").agg(pl.col("time").sum()).iter_rows())
        comp = merged(self._of("compute"))
        compute = sum(clipped_length(comp.filter(pl.col("rank") == w["rank"]), w["start"], w["end"])
                      for w in win.iter_rows(named=True))
        held = merged(pl.concat([self._of("wait").select("rank", "start", "end"),
                                 self._of("checkpoint").select("rank", "start", "end")]))
        mine = self.calls.filter(pl.col("rank").is_in(self.ranks)).select("rank", "start", "end")
        mine = mine.join(win.select("rank", pl.col("start").alias("_ws"), pl.col("end").alias("_we")), on="rank")
        mine = mine.filter((pl.col("start") >= pl.col("_ws")) & (pl.col("end") <= pl.col("_we"))).drop("_ws", "_we")
        other = inside(mine, held).filter(pl.col("_in").is_null())
        other_io = float(other.select((pl.col("end") - pl.col("start")).sum()).item() or 0.0)
        ckpt_time = float(ckpt["time"].sum() or 0.0)
        out = {"ranks": len(self.ranks), "loop_time": loop_time, "waits": waits.height,
               "wait_time": float(waits["time"].sum() or 0.0),
               "startup_wait": float(by_kind.get("startup", 0.0)), "respawn_wait": float(by_kind.get("respawn", 0.0)),
               "steady_wait": float(by_kind.get("steady", 0.0)), "compute_time": compute,
               "checkpoint_time": ckpt_time, "checkpoints": ckpt.height, "steps": waits.height,
               "epochs": self.epochs.height, "other_io_time": other_io}
        out["io_wait"] = out["steady_wait"] + out["respawn_wait"] + ckpt_time + other_io
        return out


def loop_of(log) -> Loop | None:
    """The training loop of `log` (a DFTracer trace with spans), or None without one."""
    return Loop.of(log)
