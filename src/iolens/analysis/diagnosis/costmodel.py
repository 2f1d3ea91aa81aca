"""A small cost model of the file system: what a pattern seen here costs, and would cost at more ranks.

The model is deliberately simple (docs/diagnosis.md, "The cost model"): a request of `size` bytes costs
`request_latency + size / bandwidth`. Both constants are **fitted** on the log's own operations where it
can tell (per layer and operation: DXT durations against sizes; without DXT each file record's mean time
per request against its mean request size) and **assumed** (the `fs_*` thresholds) where it cannot; an
explicit `--fs-profile` or `-t fs_*` always wins. A fitted constant describes this machine as the ranks of
this run saw it, all of them busy at once; an assumed one describes one storage server (OST) of a
Lustre-like file system, `fs_osts` of them working in parallel.

* weak scaling: each of `fs_scale_ranks` ranks does what the average rank of this run did. A run that
  already has that many ranks is not projected: its measured cost is the cost at that scale; nor is a program
  that is not an MPI job (`Context.has_layer("mpi")`): it has no ranks to add;
* every request that is small, random or otherwise not streamed pays the request latency;
* every request that shares a stripe with another rank's request costs one extent-lock conflict,
  `fs_lock_latency` (always assumed: a log cannot show it apart from the rest);
* extra bytes (re-reads, read-modify-write) stream at the bandwidth.

It gives an order of magnitude to rank findings by, not a prediction.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ..segments import Segments, groups
from .units import fmt_bytes, fmt_count, fmt_time

LAYERS = {"posix": ("DXT_POSIX", "POSIX"), "mpiio": ("DXT_MPIIO", "MPI-IO")}
LAYER_NAMES = {"posix": "POSIX", "mpiio": "MPI-IO"}
MIN_FIT_REQUESTS = 16  # fewer requests than this fit nothing: the assumed constants stay
MIN_SIZE_SPAN = 4.0  # both constants need request sizes at least this far apart (largest / smallest bin)


@dataclass(frozen=True)
class Fit:
    """duration = latency + size / bandwidth, fitted on `requests` operations; a constant the data could
    not pin is None (the caller then assumes it)."""
    latency: float | None
    bandwidth: float | None
    requests: int
    source: str  # 'dxt' | 'counters'
    layer: str = "posix"
    op: str = "write"


def fit_points(sizes, durations, weights=None, small_bytes: int = 100 * 1024) -> tuple:
    """(latency, bandwidth) of duration = latency + size / bandwidth, robustly.

    Points are grouped in power-of-two size bins; each bin gives its median size and median duration
    (so a few slow outliers, a page-cache miss or a timer hiccup, do not move the fit), then a
    least-squares line with non-negative latency and slope goes through the bins, weighted by the square
    root of their request counts. When the sizes do not span `MIN_SIZE_SPAN`, only one constant can be
    read: the per-request latency when the requests are small (at most `small_bytes`), the bandwidth
    otherwise; the other is None."""
    s = np.asarray(sizes, dtype=float)
    d = np.asarray(durations, dtype=float)
    w = np.ones_like(s) if weights is None else np.asarray(weights, dtype=float)
    keep = (s > 0) & (d >= 0) & (w > 0) & np.isfinite(d)
    s, d, w = s[keep], d[keep], w[keep]
    if w.sum() < MIN_FIT_REQUESTS:
        return None, None
    x, y, wt = _bin_medians(s, d, w, weighted=weights is not None)
    if x.max() / x.min() < MIN_SIZE_SPAN:
        x0, y0 = _weighted_median(x, wt), _weighted_median(y, wt)
        if y0 <= 0:
            return None, None
        return (y0, None) if x0 <= small_bytes else (None, x0 / y0)
    latency, slope = _nonnegative_line(x, y, wt)
    return latency, (1.0 / slope if slope > 0 else None)


def _bin_medians(s, d, w, weighted: bool) -> tuple:
    """Per power-of-two size bin: median size, median duration, sqrt(requests)."""
    bins = np.floor(np.log2(s)).astype(np.int64)
    if not weighted:  # a trace: millions of points, one polars group-by
        t = (pl.DataFrame({"b": bins, "s": s, "d": d}).group_by("b")
             .agg(pl.col("s").median(), pl.col("d").median(), pl.len().alias("n")).sort("b"))
        return t["s"].to_numpy(), t["d"].to_numpy(), np.sqrt(t["n"].to_numpy().astype(float))
    xs, ys, ws = [], [], []
    for b in np.unique(bins):
        m = bins == b
        xs.append(_weighted_median(s[m], w[m]))
        ys.append(_weighted_median(d[m], w[m]))
        ws.append(np.sqrt(w[m].sum()))
    return np.array(xs), np.array(ys), np.array(ws)


def _weighted_median(values, weights) -> float:
    order = np.argsort(values, kind="stable")
    v, c = values[order], np.cumsum(weights[order])
    return float(v[np.searchsorted(c, c[-1] / 2.0)])


def _nonnegative_line(x, y, w) -> tuple:
    """(intercept, slope) of the weighted least-squares line with both clipped at 0 (refitting the other)."""
    W = w ** 2
    sw, sx, sy = W.sum(), (W * x).sum(), (W * y).sum()
    sxx, sxy = (W * x * x).sum(), (W * x * y).sum()
    det = sw * sxx - sx * sx
    a, b = ((sxx * sy - sx * sxy) / det, (sw * sxy - sx * sy) / det) if det > 0 else (-1.0, -1.0)
    if a >= 0 and b >= 0:
        return float(a), float(b)
    if b < 0 or det <= 0:
        return float(max(sy / sw, 0.0)), 0.0  # durations do not grow with size: all latency
    return 0.0, float(max(sxy / sxx, 0.0))  # through the origin: all bandwidth


def segment_bins(seg: pl.DataFrame) -> pl.DataFrame:
    """Per operation and power-of-two size bin of traced operations: median size `s`, median duration `d`,
    count `n` (one group-by, shared by every fit of the layer)."""
    return (seg.filter(pl.col("length") > 0)
            .group_by("op", pl.col("length").cast(pl.Float64).log(2).floor().cast(pl.Int64).alias("b"))
            .agg(pl.col("length").median().alias("s"), (pl.col("end") - pl.col("start")).median().alias("d"),
                 pl.len().alias("n")).sort("op", "b"))


def trace_bins(seg: Segments) -> dict:
    """`segment_bins` of the trace's numpy columns, as numpy columns (op as "write"/"read"), with its bits: the
    bin is polars' log(2), ln(x) / ln(2), floored; the medians polars' (`median`)."""
    keep = seg.length > 0
    length, op, duration = seg.length[keep], seg.op[keep], seg.duration[keep]
    b = np.floor(np.log(length.astype(np.float64)) / np.log(2.0)).astype(np.int64)
    first, inv = groups(op, b)  # sorted by op code (write first, as the Enum sorts), then bin
    order = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[order], np.arange(len(first) + 1))
    runs = [order[a:z] for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
    return {"op": np.array(["write", "read"])[op[first]], "b": b[first],
            "s": np.array([median(length[r]) for r in runs]), "d": np.array([median(duration[r]) for r in runs]),
            "n": np.diff(bounds)}


def median(values: np.ndarray) -> float:
    """polars' median: the middle value, or of the two middle ones the lower plus half their difference (which
    numpy's mean of the two is not always, to the last bit)."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    k = len(v) // 2
    return float(v[k]) if len(v) % 2 else float(v[k - 1] + (v[k] - v[k - 1]) * 0.5)


def fit_segments(bins, layer: str, op: str | None, small_bytes: int) -> Fit | None:
    """The fit of traced operations `op` ('read', 'write' or None for both) from their `segment_bins` (or
    `trace_bins`)."""
    if isinstance(bins, pl.DataFrame):
        bins = {c: bins[c].cast(pl.String).to_numpy() if c == "op" else bins[c].to_numpy() for c in bins.columns}
    if op is not None:
        bins = {c: v[bins["op"] == op] for c, v in bins.items()}
    if not len(bins["n"]):
        return None
    lat, bw = fit_points(bins["s"], bins["d"], bins["n"], small_bytes)
    if lat is None and bw is None:
        return None
    return Fit(lat, bw, int(bins["n"].sum()), "dxt", layer, op or "both")


COUNTERS = {  # layer -> op -> (request count columns, bytes column, time column)
    "posix": {"read": (("POSIX_READS",), "POSIX_BYTES_READ", "POSIX_F_READ_TIME"),
              "write": (("POSIX_WRITES",), "POSIX_BYTES_WRITTEN", "POSIX_F_WRITE_TIME")},
    "mpiio": {"read": (tuple(f"MPIIO_{k}_READS" for k in ("INDEP", "COLL", "SPLIT", "NB")), "MPIIO_BYTES_READ",
                       "MPIIO_F_READ_TIME"),
              "write": (tuple(f"MPIIO_{k}_WRITES" for k in ("INDEP", "COLL", "SPLIT", "NB")), "MPIIO_BYTES_WRITTEN",
                        "MPIIO_F_WRITE_TIME")},
}


def counter_points(df: pl.DataFrame, layer: str, op: str | None) -> tuple:
    """(mean request size, mean time per request, requests) of each file record: the counters' points."""
    return _counter_points(lambda c: c in df.columns, lambda c: df[c].clip(lower_bound=0).to_numpy(), layer, op)


def _counter_points(has, column, layer: str, op: str | None) -> tuple:
    """`counter_points` of the counters `column(name)` (clipped at 0) where `has(name)`."""
    sizes, times, counts = [], [], []
    for o in ((op,) if op else ("read", "write")):
        ops_cols, bytes_col, time_col = COUNTERS[layer][o]
        if not all(has(c) for c in ops_cols + (bytes_col, time_col)):
            continue
        n = sum(column(c).astype(float) for c in ops_cols)
        b = column(bytes_col).astype(float)
        t = column(time_col).astype(float)
        m = (n > 0) & (b > 0) & (t > 0)
        sizes.append(b[m] / n[m])
        times.append(t[m] / n[m])
        counts.append(n[m])
    if not sizes:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    return np.concatenate(sizes), np.concatenate(times), np.concatenate(counts)


def fit_counters(df, layer: str, op: str | None, small_bytes: int) -> Fit | None:
    if df is None or df.is_empty():
        return None
    return _fit_points(counter_points(df, layer, op), layer, op, small_bytes)


def _fit_points(points: tuple, layer: str, op: str | None, small_bytes: int) -> Fit | None:
    sizes, times, counts = points
    lat, bw = fit_points(sizes, times, counts, small_bytes)
    if lat is None and bw is None:
        return None
    return Fit(lat, bw, int(counts.sum()), "counters", layer, op or "both")


def fit_of(ctx, layer: str = "posix", op: str | None = None) -> Fit | None:
    """This log's fit for one layer and operation (None: reads and writes together), computed once per log:
    from the trace where it is complete, from the counters otherwise."""
    return ctx.memo(("fs_fit", layer, op), lambda: _fit_of(ctx, layer, op))


def _fit_of(ctx, layer, op):
    dxt_module, module = LAYERS[layer]
    small = int(ctx.th.small_request_bytes)
    seg = ctx.trace_posix if layer == "posix" else ctx.trace_mpiio
    if not seg.empty and ctx.trace_complete(dxt_module, op):
        fit = fit_segments(ctx.memo(("fs_bins", layer), lambda: trace_bins(seg)), layer, op, small)
        if fit is not None:
            return fit
    if not ctx.has(module):
        return None
    records = ctx.records[module]  # the counters' numpy columns: no table built
    return _fit_points(_counter_points(records.has, lambda c: ctx.column(module, c), layer, op), layer, op, small)


@dataclass(frozen=True)
class FsProfile:
    request_latency: float
    lock_latency: float
    ost_bandwidth: float
    osts: int
    scale_ranks: int
    # where the request latency and the bandwidth come from: 'fitted' (this log) or 'assumed' (fs_*)
    latency_from: str = "assumed"
    bandwidth_from: str = "assumed"
    fit: Fit | None = None

    @classmethod
    def from_thresholds(cls, th, fit: Fit | None = None) -> "FsProfile":
        given = getattr(th, "explicit", set())
        lat_fitted = fit is not None and fit.latency is not None and "fs_request_latency" not in given
        bw_fitted = fit is not None and fit.bandwidth is not None and "fs_ost_bandwidth" not in given
        return cls(fit.latency if lat_fitted else float(th.fs_request_latency), float(th.fs_lock_latency),
                   fit.bandwidth if bw_fitted else float(th.fs_ost_bandwidth),
                   max(int(th.fs_osts), 1), max(int(th.fs_scale_ranks), 1),
                   "fitted" if lat_fitted else "assumed", "fitted" if bw_fitted else "assumed",
                   fit if (lat_fitted or bw_fitted) else None)

    def cost(self, ranks_here: int, requests: float = 0, lock_conflicts: float = 0, nbytes: float = 0,
             ranks: int | None = None) -> float:
        """Seconds the file system needs at `ranks` (default `scale_ranks`) for what `ranks_here` ranks did
        here. A fitted constant was measured with `ranks_here` ranks busy at once: that is its parallelism;
        an assumed one is per storage server: `osts` of them."""
        n = max(int(ranks_here), 1)
        scale = (ranks or self.scale_ranks) / n
        lat_par = n if self.latency_from == "fitted" else self.osts
        bw_par = n if self.bandwidth_from == "fitted" else self.osts
        return scale * (requests * self.request_latency / lat_par + lock_conflicts * self.lock_latency / self.osts
                        + nbytes / self.ost_bandwidth / bw_par)

    def latency_share(self, request_bytes: float) -> float:
        """The part of one request's cost at this size that is per-request latency (what aggregating removes)."""
        per = self.request_latency + max(float(request_bytes), 0.0) / self.ost_bandwidth
        return self.request_latency / per if per > 0 else 0.0

    def constants(self) -> str:
        """Which constants the model used, and where each came from."""
        def where(kind):
            if kind != "fitted" or self.fit is None:
                return "assumed"
            f = self.fit
            return (f"fitted on {fmt_count(f.requests)} {LAYER_NAMES[f.layer]} "
                    f"{'operations' if f.op == 'both' else f.op + 's'} ({'DXT' if f.source == 'dxt' else 'counters'})")
        lat = f"request latency {fmt_time(self.request_latency)} {where(self.latency_from)}"
        bw = f"bandwidth {fmt_bytes(self.ost_bandwidth)}/s {where(self.bandwidth_from)}"
        if self.latency_from == self.bandwidth_from == "fitted":
            return f"request latency {fmt_time(self.request_latency)} and bandwidth " \
                   f"{fmt_bytes(self.ost_bandwidth)}/s per rank {where('fitted')}"
        return f"{lat}, {bw}"


def profile(ctx, layer: str = "posix", op: str | None = None) -> FsProfile:
    return FsProfile.from_thresholds(ctx.th, fit_of(ctx, layer, op))


def project(ctx, metrics: dict, here_seconds: float, *, requests: float = 0, lock_conflicts: float = 0,
            nbytes: float = 0, layer: str = "posix", op: str | None = None) -> str:
    """Add the model's constants and the projected cost to `metrics`; return the sentence that says them.
    No projection to a rank count the run already has (its measured cost is the cost at that scale), nor for a
    program that is not an MPI job (one process, or processes that are not ranks of one launch)."""
    fs = profile(ctx, layer, op)
    metrics["model_request_latency_s"] = fs.request_latency
    metrics["model_bandwidth_bytes_per_s"] = fs.ost_bandwidth
    metrics["model_request_latency_fitted"] = int(fs.latency_from == "fitted")
    metrics["model_bandwidth_fitted"] = int(fs.bandwidth_from == "fitted")
    here = f"≈ {fmt_time(here_seconds)}"
    here += f" of this {fmt_time(ctx.run_time)} run here" if ctx.run_time > 0 else " here"
    if not ctx.has_layer("mpi"):  # more ranks of a program that is not an MPI job: nothing the log can say
        return (f"Cost: {here} (not an MPI job: no projection to more ranks). Model: {fs.constants()}.")
    if fs.scale_ranks <= ctx.nprocs:
        return (f"Cost: {here}, already at {fmt_count(ctx.nprocs)} ranks (no projection to "
                f"{fmt_count(fs.scale_ranks)}: the measured cost is the cost at that scale). Model: {fs.constants()}.")
    # every constant the cost needs is this machine's: the measured cost itself scales (weak scaling, the
    # file system shared by S/n times the ranks); the model evaluated with the fit would describe the average
    # rank, not the busiest one the measurement is about
    used = ([fs.latency_from] if requests else []) + ([fs.bandwidth_from] if nbytes else []) \
        + (["assumed"] if lock_conflicts else [])
    if used and set(used) == {"fitted"} and here_seconds > 0:
        at_scale = here_seconds * fs.scale_ranks / ctx.nprocs
        where = "on this machine's file system (the cost measured here, weak scaling)"
    else:
        at_scale = fs.cost(ctx.nprocs, requests, lock_conflicts, nbytes)
        where = (f"on a Lustre-like file system ({fs.osts} OSTs)" if "fitted" not in used
                 else f"on this machine's file system where fitted, {fs.osts} OSTs where assumed")
    metrics["projected_time_s"] = at_scale
    metrics["projected_ranks"] = fs.scale_ranks
    return (f"Cost: {here}; ≈ {fmt_time(at_scale)} at {fmt_count(fs.scale_ranks)} ranks {where} "
            f"({fs.constants()}{', lock conflict ' + fmt_time(fs.lock_latency) + ' assumed' if lock_conflicts else ''}"
            "; see the cost model in docs/diagnosis.md).")
