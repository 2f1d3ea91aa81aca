"""Counter-based checks as column rules over a per-job features table.

A rule code has (a) a features function: one log's `Context` -> plain scalars (counts, shares, seconds), and
(b) a rule: polars expressions over a features frame and a `Thresholds` giving the code's severity (null when
not found) and whether it is `strong` (the global post-pass never demotes a strong finding). `diagnose(log)`
evaluates the rule on a one-row frame of the log's features before it writes the insight; `fleet build` stores
the features and evaluates the same rule over a batch; `fleet report -t` evaluates it over the stored table.

    from iolens.analysis.diagnosis.rules import RULES, evaluate
    jobs_with_insights = evaluate(features_frame, Thresholds({"small_request_bytes": 65536}))
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import polars as pl

from ..thresholds import Thresholds
from .common import (COMMON_FEATURES, EDGES, RuleError, common_features, demoted, edge_index, judge, matters, stage,
                     stage_name)
from . import (collective_io, data_sieving, fsync_heavy, hdf5_metadata, lustre_striping, metadata_heavy, misaligned_io,
               mpiio_overhead, no_collective_io, ost_imbalance, random_access, rank_imbalance, redundant_io, slow_ost,
               small_io, stdio_heavy)

__all__ = ["RULES", "Rule", "RuleError", "evaluate", "features", "feature_dtypes", "feature_names", "judge", "matters",
           "demoted", "edge_index", "common_features", "one_row", "with_stages", "drop_stages", "stage", "stale_expr"]


@dataclass(frozen=True)
class Rule:
    code: str
    check: str  # the name of the check in `diagnosis.CHECKS` that writes the insight
    features: Callable  # (ctx, edges) -> dict of scalars (edges: the size-bin edge indices to keep, or None)
    rule: Callable  # (th) -> {"severity": expr, "strong": expr, ...}
    dtypes: Callable  # () -> {column: polars dtype} of every feature column a full (fleet) row holds
    thresholds: tuple  # names of the thresholds the rule reads (the common ones included)
    stale: Callable | None = None  # (th) -> expr: rows whose stored features cannot answer `th` (a rebuild can)
    title: Callable | None = None  # (values of `rule`'s columns, th) -> the insight's title
    parts: tuple = ()  # one insight per part (e.g. write, read): stages severity_<part>, strong_<part>, score_<part>


RULES = {r.code: r for r in (
    Rule("NO_COLLECTIVE_IO", "no_collective_io", no_collective_io.features, no_collective_io.rule,
         no_collective_io.dtypes, no_collective_io.THRESHOLDS, None, no_collective_io.title, no_collective_io.PARTS),
    Rule("COLLECTIVE_IO", "collective_io", collective_io.features, collective_io.rule, collective_io.dtypes,
         collective_io.THRESHOLDS, None, collective_io.title, collective_io.PARTS),
    Rule("DATA_SIEVING", "data_sieving", data_sieving.features, data_sieving.rule, data_sieving.dtypes,
         data_sieving.THRESHOLDS, data_sieving.stale, data_sieving.title),
    Rule("MPIIO_OVERHEAD", "mpiio_overhead", mpiio_overhead.features, mpiio_overhead.rule, mpiio_overhead.dtypes,
         mpiio_overhead.THRESHOLDS, None, mpiio_overhead.title),
    Rule("SMALL_IO", "small_io", small_io.features, small_io.rule, small_io.dtypes, small_io.THRESHOLDS, small_io.stale,
         small_io.title),
    Rule("FSYNC_HEAVY", "fsync_heavy", fsync_heavy.features, fsync_heavy.rule, fsync_heavy.dtypes,
         fsync_heavy.THRESHOLDS, None, fsync_heavy.title),
    Rule("STDIO_HEAVY", "stdio_heavy", stdio_heavy.features, stdio_heavy.rule, stdio_heavy.dtypes,
         stdio_heavy.THRESHOLDS, None, stdio_heavy.title),
    Rule("METADATA_HEAVY", "metadata_heavy", metadata_heavy.features, metadata_heavy.rule, metadata_heavy.dtypes,
         metadata_heavy.THRESHOLDS, metadata_heavy.stale, metadata_heavy.title),
    Rule("LUSTRE_STRIPING", "lustre_striping", lustre_striping.features, lustre_striping.rule,
         lustre_striping.dtypes, lustre_striping.THRESHOLDS, None, lustre_striping.title),
    Rule("OST_IMBALANCE", "ost_imbalance", ost_imbalance.features, ost_imbalance.rule, ost_imbalance.dtypes,
         ost_imbalance.THRESHOLDS, None, ost_imbalance.title),
    Rule("HDF5_METADATA", "hdf5_metadata", hdf5_metadata.features, hdf5_metadata.rule, hdf5_metadata.dtypes,
         hdf5_metadata.THRESHOLDS, hdf5_metadata.stale, hdf5_metadata.title),
    Rule("REDUNDANT_WRITES", "redundancy", redundant_io.writes_features, redundant_io.writes_rule,
         redundant_io.writes_dtypes, redundant_io.THRESHOLDS, redundant_io.writes_stale, redundant_io.writes_title),
    Rule("REDUNDANT_READS", "redundancy", redundant_io.reads_features, redundant_io.reads_rule,
         redundant_io.reads_dtypes, redundant_io.THRESHOLDS + redundant_io.SIEVING, redundant_io.reads_stale,
         redundant_io.reads_title),
    Rule("SLOW_OST", "slow_ost", slow_ost.features, slow_ost.rule, slow_ost.dtypes, slow_ost.THRESHOLDS, None,
         slow_ost.title),
    Rule("MISALIGNED_IO", "misaligned_io", misaligned_io.features, misaligned_io.rule, misaligned_io.dtypes,
         misaligned_io.THRESHOLDS, None, misaligned_io.title),
    Rule("RANDOM_ACCESS", "random_access", random_access.features, random_access.rule, random_access.dtypes,
         random_access.THRESHOLDS, random_access.stale, random_access.title, random_access.PARTS),
    Rule("RANK_IMBALANCE", "rank_imbalance", rank_imbalance.features, rank_imbalance.rule, rank_imbalance.dtypes,
         rank_imbalance.THRESHOLDS, rank_imbalance.stale, rank_imbalance.title),
)}


def features(ctx, codes=None) -> dict:
    """Every rule feature of one log for a fleet row (all size-bin edges): the common ones and each code's."""
    row = common_features(ctx)
    for code in codes or RULES:
        row.update(RULES[code].features(ctx, None))
    return row


def feature_dtypes() -> dict:
    """{column: polars dtype} of every rule feature a fleet row holds, in the store's column order."""
    return dict(_feature_dtypes())


@functools.cache
def feature_names() -> tuple:
    """The columns of `feature_dtypes`, in order (made once per process: a fleet row is assembled per log)."""
    return tuple(_feature_dtypes())


@functools.cache
def _feature_dtypes() -> dict:  # built once per process: a fleet build asks for it per log
    out = dict(COMMON_FEATURES)
    for r in RULES.values():
        out.update(r.dtypes())
    return out


def with_stages(frame, code: str, th: Thresholds, exprs: dict | None = None):
    """`frame` (Data or LazyFrame) with each stage of `code`'s rule (or of `exprs`) as a column
    `stage_name(code, name)`, in order, then the code's `insight` (its most severe insight after the demotion),
    its `score` and `best` part (for the headline) and `serious` (how many of its insights are critical or
    warning)."""
    exprs = RULES[code].rule(th) if exprs is None else exprs
    frame = _stages(frame, code, exprs)
    parts = RULES[code].parts if code in RULES else ()
    if not parts:
        # a rule writing several insights of one severity counts them (`count`): the demotion moves them all
        count = stage(code, "count") if "count" in exprs else pl.lit(1, pl.Int64)
        return _stages(frame, code, {"insight": demoted(stage(code, "severity"), ~stage(code, "strong"), th),
                                     "best": pl.lit(None, pl.String),
                                     "serious": stage(code, "insight").is_in(SERIOUS).fill_null(False).cast(pl.Int64)
                                     * count})
    # several insights: the code's column is the first in the diagnosis's order (severity, then score, then
    # the order the check wrote them in)
    for p in parts:
        frame = _stages(frame, code, {f"insight_{p}": demoted(stage(code, f"severity_{p}"),
                                                             ~stage(code, f"strong_{p}"), th)})
    frame = _stages(frame, code, {"insight": stage(code, f"insight_{parts[0]}"), "score": stage(code, f"score_{parts[0]}"),
                                  "best": pl.lit(parts[0])})
    for p in parts[1:]:
        r_p, r_b = _rank(stage(code, f"insight_{p}")), _rank(stage(code, "insight"))
        better = (r_p.is_not_null() & (r_b.is_null() | (r_p < r_b) | (
            (r_p == r_b) & (stage(code, f"score_{p}") > stage(code, "score"))))).fill_null(False)
        frame = _stages(frame, code, {"better": better})
        frame = _stages(frame, code, {
            "insight": pl.when(stage(code, "better")).then(stage(code, f"insight_{p}")).otherwise(stage(code, "insight")),
            "score": pl.when(stage(code, "better")).then(stage(code, f"score_{p}")).otherwise(stage(code, "score")),
            "best": pl.when(stage(code, "better")).then(pl.lit(p)).otherwise(stage(code, "best"))})
    serious = pl.sum_horizontal([stage(code, f"insight_{p}").is_in(SERIOUS).fill_null(False).cast(pl.Int64)
                                 for p in parts])
    return _stages(frame, code, {"serious": serious})


SERIOUS = ("critical", "warning")


def _rank(severity: pl.Expr) -> pl.Expr:
    return severity.replace_strict({"critical": 0, "warning": 1, "info": 2, "ok": 3}, default=None,
                                   return_dtype=pl.Int64)


def drop_stages(frame, codes):
    prefixes = tuple(stage_name(c, "") for c in codes)
    return frame.drop([n for n in frame.collect_schema().names() if n.startswith(prefixes)])


def check_edges(th: Thresholds) -> None:
    """Raise RuleError when a stored features table (size-bin edges up to 1 GiB) cannot answer `th`."""
    if edge_index(int(th.small_request_bytes)) > len(EDGES):
        raise RuleError(f"small_request_bytes: {int(th.small_request_bytes)} is past the last size-bin edge the "
                        "store keeps (1 GiB)")


def stale_expr(code: str, th: Thresholds):
    r = RULES[code]
    return r.stale(th) if r.stale is not None else None


def evaluate(frame, th: Thresholds, codes=None):
    """`frame` (a DataFrame or LazyFrame of feature rows) with each rule code's `insight_CODE` column."""
    codes = list(codes or RULES)
    for code in codes:
        frame = with_stages(frame, code, th).with_columns(stage(code, "insight").alias(f"insight_{code}"))
    return drop_stages(frame, codes)


def one_row(values: dict, exprs: dict, code: str = "") -> dict:
    """A rule's stages (`exprs`) evaluated on one log's features (a batch of one): name -> Python value. A
    feature the stages read but the log's check did not compute (a branch not taken) is null. Only the features
    the stages read are built; stages reading each other are added one level at a time (`_stages`)."""
    dtypes = _all_dtypes()
    prefix = stage_name(code, "")
    roots = {n for e in exprs.values() for n in e.meta.root_names()}
    names = {n for n in roots if not (code and n.startswith(prefix))}
    frame = pl.DataFrame({n: pl.Series(n, [values.get(n)], dtype=dtypes.get(n, pl.Float64)) for n in names})
    if len(names) == len(roots):  # no stage reads another: one query
        return frame.select(**exprs).row(0, named=True)
    frame = _stages(frame, code, exprs).select([stage_name(code, k) for k in exprs])
    return dict(zip(exprs, frame.row(0)))  # lists as lists


def _stages(frame, code: str, exprs: dict):
    """`frame` with each stage as a column, in order; stages that read none of the pending ones are added
    together (one `with_columns` per level of the rule, not one per stage)."""
    batch, pending = [], set()
    for name, expr in exprs.items():
        if pending & set(expr.meta.root_names()):
            frame, batch, pending = frame.with_columns(batch), [], set()
        batch.append(expr.alias(stage_name(code, name)))
        pending.add(stage_name(code, name))
    return frame.with_columns(batch) if batch else frame


def _all_dtypes() -> dict:
    global _DTYPES
    if _DTYPES is None:
        _DTYPES = dict(_feature_dtypes())
        for r in RULES.values():  # diagnose-only columns (the every-bin edge) share their kind's type
            _DTYPES.update({n.replace("_le1G", "_lemax"): t for n, t in r.dtypes().items() if n.endswith("_le1G")})
    return _DTYPES


_DTYPES = None


# thresholds a rule reads that per-log checks read too (RANK_IMBALANCE's dedupe reads SERIALIZED_IO's; every
# check's severity goes through judge/matters and the demotion): a change of one of these recomputes the rule
# codes, while the per-log codes keep the severity they were built with
SHARED_WITH_CHECKS = frozenset({*rank_imbalance.SERIALIZED, *common.COMMON_THRESHOLDS})


def rule_only(names) -> list:
    """Of threshold `names`, those only rules read (for a severity): a change of any other needs a rebuild for
    the per-log codes (the cost model's fs_* only change the projections' text, which the store has not)."""
    own = {n for r in RULES.values() for n in r.thresholds} - SHARED_WITH_CHECKS
    return [n for n in names if n in own]
