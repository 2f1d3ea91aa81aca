"""Diagnosis: from what the trace and counters show to which tuning knob fixes it.

    from iolens.analysis.diagnosis import diagnose
    for insight in diagnose(iolens.read("job.darshan")):
        print(insight.severity, insight.code, insight.title)

`diagnose(log, thresholds=None)` returns `Insight`s sorted most severe first; `Insight.to_dict()` is the
stable JSON shape documented in docs/diagnosis.md (`SCHEMA_VERSION`).
"""
from __future__ import annotations

import traceback
import warnings

import polars as pl

from . import (collective, conflicts, hdf5, interfaces, lustre, metadata, mpiio_overhead, ranks, redundancy, requests,
               savings, trace)
from .context import Context
from .rules.common import IO_TIME_SHARE, demoted
from .insight import (CODES, JSON_SCHEMA, SCHEMA_VERSION, SEVERITIES, Evidence, Insight, Recommendation,
                      sort_key)
from .thresholds import DEFINITIONS, Thresholds, load_config, parse_assignment
from .units import fmt_pct

__all__ = ["diagnose", "diagnose_context", "Context", "Insight", "Evidence", "Recommendation", "Thresholds", "CODES", "SEVERITIES",
           "SCHEMA_VERSION", "JSON_SCHEMA", "DEFINITIONS", "load_config", "parse_assignment", "CHECKS"]

# (name, function) in the order they run; each returns a list of Insight
CHECKS = (
    ("trace", trace.check),
    ("small_io", requests.check_small),
    ("misaligned_io", requests.check_misaligned),
    ("random_access", requests.check_random),
    ("serialized_io", ranks.check_serialized),
    ("rank_imbalance", ranks.check_imbalance),
    ("straggler", ranks.check_straggler),
    ("no_collective_io", collective.check_no_collective),
    ("collective_io", collective.check_collective),
    ("mpiio_overhead", mpiio_overhead.check),
    ("data_sieving", collective.check_sieving),
    ("hdf5_metadata", hdf5.check),
    ("lustre_striping", lustre.check_striping),
    ("ost_imbalance", lustre.check_ost_imbalance),
    ("slow_ost", lustre.check_slow_ost),
    ("metadata_heavy", metadata.check),
    ("redundancy", redundancy.check),
    ("fsync_heavy", interfaces.check_fsync),
    ("stdio_heavy", interfaces.check_stdio),
    ("conflict", conflicts.check),
)


def diagnose(log, thresholds=None, strict: bool = False) -> list:
    """Every insight iolens finds in `log`, most severe first.

    thresholds: a `Thresholds`, or a dict of overrides {name: value} (see `DEFINITIONS`).
    strict: re-raise a failing check instead of reporting it as a CHECK_FAILED insight (tests use this).
    """
    th = thresholds if isinstance(thresholds, Thresholds) else Thresholds(thresholds or {})
    return diagnose_context(Context(log, th), strict=strict)


def diagnose_context(ctx: Context, skip=(), strict: bool = False) -> list:
    """`diagnose` on a log's `Context`, without the checks named in `skip` (the fleet evaluates the rule
    codes' checks over a whole batch instead: `rules.RULES[code].check`)."""
    log = ctx.log
    found = []
    for name, check in CHECKS:
        if name in skip:
            continue
        try:
            found.extend(check(ctx))
        except Exception as exc:  # one broken check must not hide the others
            if strict:
                raise
            warnings.warn(f"iolens: check {name} failed on {log.path}: {exc!r}", RuntimeWarning, stacklevel=2)
            found.append(Insight(
                "CHECK_FAILED", "info", f"The {name} check failed on this log",
                f"{type(exc).__name__}: {exc}. The other checks ran; please report this with the log.",
                Evidence(metrics={}), [], source="counters", demotable=False,
                score=0.0))
            found[-1].summary += " " + traceback.format_exc(limit=1).strip().splitlines()[-1]
    found = _dedupe(found)
    _demote_if_io_is_negligible(ctx, found)
    savings.attach(ctx, found)
    return sorted(found, key=sort_key)


def _dedupe(found: list) -> list:
    """Say when a rank's insight restates SLOW_OST. (The insights that only restate a more specific one are
    dropped by their rules: OST_IMBALANCE's restating LUSTRE_STRIPING, REDUNDANT_READS's restating
    DATA_SIEVING, RANK_IMBALANCE's restating SERIALIZED_IO: rules/ost_imbalance.py, rules/redundant_io.py,
    rules/rank_imbalance.py.)"""
    slow_ost = next((i for i in found if i.code == "SLOW_OST"), None)
    out = []
    for i in found:
        if (i.code in ("RANK_IMBALANCE", "STRAGGLER") and slow_ost is not None and
                set(i.evidence.ranks[:4]) & set(slow_ost.evidence.ranks)):
            i.summary += (f" These ranks' files are on OST {slow_ost.evidence.metrics.get('ost')}, which is slow "
                          "(see SLOW_OST).")
        out.append(i)
    return out


def _demote_if_io_is_negligible(ctx, found: list) -> None:
    """The global post-pass (`rules.demoted`, the fleet's too): demotable warnings become info when the
    slowest rank spends almost none of the run in I/O."""
    if not found:
        return
    share = ctx.io_time_share
    # `demoted` moves only a demotable critical or warning, and only when the share is below the threshold:
    # where neither can hold it changes nothing, and its query is skipped
    if share is None or not share < ctx.th.min_io_time_share or not any(
            i.demotable and i.severity in ("critical", "warning") for i in found):
        return
    frame = pl.DataFrame({"severity": [i.severity for i in found], "demotable": [i.demotable for i in found],
                          IO_TIME_SHARE: pl.Series([share] * len(found), dtype=pl.Float64)})
    after = frame.select(demoted(pl.col("severity"), pl.col("demotable"), ctx.th).alias("s"))["s"].to_list()
    for i, severity in zip(found, after):
        if severity != i.severity:
            i.severity = severity
            i.summary += (f" (Shown as info: the slowest rank spends only {fmt_pct(share)} of the run time in I/O, "
                          "so fixing this cannot speed the job up noticeably.)")
