"""What a facility asks of its jobs table: applications, variability, insights across jobs, peer groups, top jobs.

Input is the fleet store's jobs table (`iolens.fleet.store.read(store, "jobs")`). Every aggregate counts
every job; a rate over many jobs is total bytes over total I/O time, never a sum or mean of rates.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ..optional import require
from .diagnosis import CODES
from .measures import bandwidth

SERIOUS = ("critical", "warning")
# features the peer groups are clustered on: (column, log-scaled?)
PEER_FEATURES = (("nprocs", True), ("run_time", True), ("io_share", False), ("bytes", True),
                 ("bandwidth", True), ("small_share", False), ("meta_share", False), ("files", True),
                 ("seq_share", False), ("read_share", False))
PEER_FIT_MAX = 5000  # HDBSCAN fits on at most this many jobs; the others join their nearest fitted job's group


def with_derived(jobs: pl.DataFrame) -> pl.DataFrame:
    """Add the columns the fleet views share: read share of bytes, core-seconds spent in I/O."""
    return jobs.with_columns(
        pl.when(pl.col("bytes") > 0).then(pl.col("bytes_read") / pl.col("bytes")).alias("read_share"),
        (pl.col("io_time") * pl.col("nprocs").clip(lower_bound=1)).alias("io_core_seconds"),
    )


def insight_columns(jobs: pl.DataFrame) -> list:
    return [f"insight_{c}" for c in CODES if f"insight_{c}" in jobs.columns]


def five_numbers(values: np.ndarray) -> dict | None:
    v = values[np.isfinite(values)]
    if not len(v):
        return None
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    return {"min": float(v.min()), "q1": float(q1), "median": float(med), "q3": float(q3), "max": float(v.max())}


def applications(jobs: pl.DataFrame, max_outliers: int = 5) -> list:
    """Per application: jobs, I/O time, core-hours in I/O, aggregate bandwidth, frequent insights, and the
    run-to-run spread of I/O time and bandwidth (five numbers, latest run, outliers beyond 1.5 IQR)."""
    codes = insight_columns(jobs)
    out = []
    for (app,), g in jobs.sort("start_time").group_by(["app"], maintain_order=True):
        io_time = g["io_time"].to_numpy().astype(float)
        bw = g["bandwidth"].fill_null(np.nan).to_numpy().astype(float)
        total_io = float(io_time.sum())
        frequent = sorted(((c[len("insight_"):], int(g[c].is_in(SERIOUS).sum())) for c in codes),
                          key=lambda t: -t[1])
        latest = g.row(g.height - 1, named=True)
        out.append({
            "app": app or "(unknown)",
            "jobs": g.height,
            "io_time": total_io,
            "core_hours_io": float(g["io_core_seconds"].sum()) / 3600,
            "bytes": int(g["bytes"].sum()),
            "bandwidth": bandwidth(float(g["bytes"].sum()), total_io),
            "insights": [{"code": c, "jobs": n} for c, n in frequent[:3] if n],
            "io_time_box": five_numbers(io_time),
            "bandwidth_box": five_numbers(bw),
            "latest": {"path": latest["path"], "io_time": latest["io_time"], "bandwidth": latest["bandwidth"],
                       "outlier": bool(_outlier(io_time, latest["io_time"])),
                       "bandwidth_outlier": bool(_outlier(bw, latest["bandwidth"]))},
            "outliers": _outliers(g, io_time, max_outliers),
        })
    return sorted(out, key=lambda a: -a["io_time"])


def _fences(values: np.ndarray):
    v = values[np.isfinite(values)]
    if len(v) < 4:
        return None
    q1, q3 = np.percentile(v, [25, 75])
    return q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)


def _outlier(values: np.ndarray, x) -> bool:
    f = _fences(values)
    return f is not None and x is not None and (x < f[0] or x > f[1])


def _outliers(g: pl.DataFrame, io_time: np.ndarray, limit: int) -> list:
    f = _fences(io_time)
    if f is None:
        return []
    idx = np.flatnonzero((io_time < f[0]) | (io_time > f[1]))
    idx = idx[np.argsort(-np.abs(io_time[idx] - np.median(io_time)))][:limit]
    return [{"path": g["path"][int(i)], "jobid": int(g["jobid"][int(i)]), "io_time": float(io_time[i])}
            for i in idx]


def insights_across(jobs: pl.DataFrame) -> list:
    """Per insight code: jobs at each severity and the I/O time of the jobs where it is critical or a warning."""
    out = []
    for col in insight_columns(jobs):
        sev = jobs[col]
        serious = sev.is_in(SERIOUS)
        row = {"code": col[len("insight_"):], "meaning": CODES[col[len("insight_"):]],
               **{s: int((sev == s).sum()) for s in ("critical", "warning", "info")},
               "io_time": float(jobs.filter(serious)["io_time"].sum()),
               "core_hours_io": float(jobs.filter(serious)["io_core_seconds"].sum()) / 3600}
        if row["critical"] or row["warning"] or row["info"]:
            out.append(row)
    return sorted(out, key=lambda r: (-r["io_time"], -r["critical"], -r["warning"]))


def peer_matrix(jobs: pl.DataFrame) -> np.ndarray:
    """Jobs x features, log-scaled where a feature spans orders of magnitude, each column scaled to [0, 1]."""
    cols = []
    for name, log in PEER_FEATURES:
        v = jobs[name].cast(pl.Float64).fill_null(0.0).to_numpy()
        v = np.log10(1 + np.maximum(v, 0)) if log else v
        span = v.max() - v.min() if len(v) else 0
        cols.append((v - v.min()) / span if span > 0 else np.zeros_like(v))
    return np.column_stack(cols) if cols else np.zeros((jobs.height, 0))


def peer_groups(jobs: pl.DataFrame, seed: int = 0) -> np.ndarray:
    """A group label per job (-1: like no other group) from HDBSCAN over the log-scaled features."""
    n = jobs.height
    if n < 5:  # too few to group (and scikit-learn, 2 s to import, is not loaded)
        return np.full(n, -1)
    HDBSCAN = require("sklearn.cluster").HDBSCAN
    KNeighborsClassifier = require("sklearn.neighbors").KNeighborsClassifier
    x = peer_matrix(jobs)
    fit = np.arange(n) if n <= PEER_FIT_MAX else np.sort(np.random.default_rng(seed).choice(n, PEER_FIT_MAX,
                                                                                              replace=False))
    labels_fit = HDBSCAN(min_cluster_size=max(3, min(50, len(fit) // 50)), copy=True).fit_predict(x[fit])
    if len(fit) == n:
        return labels_fit
    labels = KNeighborsClassifier(n_neighbors=1).fit(x[fit], labels_fit).predict(x)
    labels[fit] = labels_fit
    return labels


def group_summaries(jobs: pl.DataFrame, labels: np.ndarray) -> list:
    """Each peer group's size, typical (median) features, applications and most frequent insights."""
    jobs = jobs.with_columns(pl.Series("group", labels))
    codes = insight_columns(jobs)
    out = []
    for (label,), g in jobs.group_by(["group"]):
        typical = {name: _median(g[name]) for name, _ in PEER_FEATURES}
        apps = g["app"].value_counts(sort=True).head(3)
        frequent = sorted(((c[len("insight_"):], int(g[c].is_in(SERIOUS).sum())) for c in codes),
                          key=lambda t: -t[1])
        io = float(g["io_time"].sum())
        out.append({"group": int(label), "jobs": g.height, "typical": typical, "unlike": _most_unlike(g),
                    "apps": [{"app": a, "jobs": int(k)} for a, k in apps.iter_rows()],
                    "insights": [{"code": c, "jobs": k} for c, k in frequent[:3] if k],
                    "io_time": io, "bandwidth": bandwidth(float(g["bytes"].sum()), io)})
    return sorted(out, key=lambda r: (r["group"] < 0, -r["jobs"]))


def _most_unlike(g: pl.DataFrame) -> dict | None:
    """The job whose I/O time is furthest (as a ratio) from its group's median: the one to look at."""
    t = g["io_time"].cast(pl.Float64).to_numpy()
    med = float(np.median(t)) if len(t) else 0.0
    if len(t) < 3 or med <= 0:
        return None
    ratio = np.maximum(t, 1e-9) / med
    k = int(np.argmax(np.abs(np.log(ratio))))
    return {"path": g["path"][k], "io_time": float(t[k]), "ratio": float(ratio[k])}


def _median(s: pl.Series):
    m = s.cast(pl.Float64).median()
    return float(m) if m is not None else None


def top_jobs(jobs: pl.DataFrame, limit: int = 50) -> pl.DataFrame:
    """The jobs with the most I/O time at stake (I/O time x processes), most first."""
    return jobs.sort("io_core_seconds", descending=True, nulls_last=True).head(limit)


def fleet_totals(jobs: pl.DataFrame) -> dict:
    io = float(jobs["io_time"].sum())
    return {"jobs": jobs.height, "apps": int(jobs["app"].n_unique()), "io_time": io,
            "core_hours_io": float(jobs["io_core_seconds"].sum()) / 3600, "bytes": int(jobs["bytes"].sum()),
            "bandwidth": bandwidth(float(jobs["bytes"].sum()), io),
            "first_start": jobs["start_time"].min(), "last_end": jobs["end_time"].max()}
