"""How a log is diagnosed: each finding of the registry on the log's `Context`, then what the findings say of
each other (supersedes, annotations), the demotion of negligible I/O, the advice that fits the log (fit.py), the
savings, most severe first.

A finding with a rule is judged here as over a fleet batch: its features for this log (`measure`), the
verdicts of the findings superseding it, its rule's stages evaluated once (`stages.evaluate`); its `report`
writes the insights the stages found. A finding without a rule reports from the log directly.
"""
from __future__ import annotations

import functools
import traceback
import warnings

import polars as pl

from . import savings
from .common import COMMON_FEATURES, IO_TIME_SHARE, common_features, demoted, noise_seconds
from .findings import CHECK_FAILED, FINDINGS, finding, supersedes_of
from .fit import fit_advice
from .insight import Evidence, Insight, sort_key
from .stages import SERIOUS, evaluate, judged_severities, noisy, rule_stages, saving_name
from .units import fmt_pct, fmt_time


def diagnose_context(ctx, skip=(), strict: bool = False) -> list:
    """Every insight of the log of `ctx`, most severe first, without the findings whose codes are in `skip`
    (the fleet judges the rule findings over a whole batch instead). `strict`: re-raise a failing finding
    instead of reporting it as a CHECK_FAILED insight (tests use this)."""
    found = []
    for code, f in FINDINGS.items():
        if code in skip:
            continue
        try:
            found.extend(run(f, ctx))
        except Exception as exc:  # one broken finding must not hide the others
            if strict:
                raise
            found.append(_check_failed(ctx, f.module, exc))
    for f in FINDINGS.values():
        mine = [i for i in found if i.code == f.code]
        if f.annotate is not None and mine:
            f.annotate(mine, found)
    _demote_if_io_is_negligible(ctx, found)
    _demote_if_io_is_hidden(ctx, found)
    fit_advice(ctx, found)
    savings.attach(ctx, found, lambda code: finding(code).saving)
    savings.order_by_saving(found)
    _quiet_what_saves_under_noise(ctx, found)
    return sorted(found, key=sort_key)


def run(f, ctx) -> list:
    """The insights of finding `f` on one log."""
    if f.rule is None:
        return f.report(ctx, None)
    values = (f.measure or f.features)(ctx)
    if values is None:
        return []  # nothing it could find here
    supersedes = supersedes_of(f.code)
    for s in supersedes:
        if s.features is not None:
            values.update(s.features(ctx))
    stages = rule_stages(f, ctx.th, supersedes)
    judged = evaluate({**common_features(ctx), **values}, stages, row_dtypes(f.code), f.code)
    severities = judged_severities(f, stages, judged)
    if all(s is None for s in severities.values()):
        return []
    quieted = {p: judged.get(saving_name(p), judged.get(saving_name(None))) for p, s in severities.items()
               if s == "info" and judged["severity" if p is None else f"severity_{p}"] in SERIOUS and noisy(judged, p)}
    # a part quieted by its savings is reported at the rule's severity, then shown as info with that reason: its
    # report's "they cost the busiest rank only …: not worth fixing" is for what the rule itself found cheap
    judged.update({f"severity_{p}" if p else "severity": s for p, s in severities.items() if p not in quieted})
    found = f.report(ctx, {**values, **judged})
    for part, seconds in quieted.items():  # say why (a part: the insights whose headline metric names it)
        for i in found:
            if i.severity in SERIOUS and (part is None or part in (i.key_metric or "")):
                i.severity = "info"
                i.summary += quiet_note(ctx, seconds)
    return found


def quiet_note(ctx, seconds) -> str:
    """Why an insight is shown as info: its fixes save under the noise of two identical runs."""
    if seconds is not None and seconds < 0:
        return (f" (Shown as info: its fix would cost about {fmt_time(-seconds)} of the slowest rank's I/O time here "
                "rather than save it.)")
    return (f" (Shown as info: its fixes are expected to save at most about {fmt_time(seconds or 0.0)} here, under "
            f"the noise of two identical runs, about {fmt_time(noise_seconds(ctx))}.)")


def _quiet_what_saves_under_noise(ctx, found: list) -> None:
    """The per-log findings (no rule: the rules decide it in their stages, as the fleet does): a critical or
    warning whose best recommendation saves under the noise of two identical runs is info."""
    limit = None
    for i in found:
        f = FINDINGS.get(i.code)
        if i.severity not in SERIOUS or f is None or f.rule is not None:
            continue
        best = max((r.expected_saving for r in i.recommendations if r.expected_saving is not None), default=None)
        if best is None:
            continue
        limit = noise_seconds(ctx) if limit is None else limit
        if best < limit:
            i.severity = "info"
            i.summary += quiet_note(ctx, best)


@functools.cache
def row_dtypes(code: str) -> dict:
    """{column: dtype} of one log's features for `code`'s rule: its own, the job facts, those of the findings
    superseding it; a per-log size-bin edge past the stored ones (`_lemax`) has its kind's type."""
    f = FINDINGS[code]
    out = {**COMMON_FEATURES, **f.dtypes()}
    for s in supersedes_of(code):
        out.update(s.dtypes() if s.dtypes is not None else {})
    out.update({n.replace("_le1G", "_lemax"): t for n, t in list(out.items()) if n.endswith("_le1G")})
    return out


def _check_failed(ctx, name: str, exc: Exception) -> Insight:
    warnings.warn(f"iolens: check {name} failed on {ctx.log.path}: {exc!r}", RuntimeWarning, stacklevel=3)
    i = Insight(CHECK_FAILED.code, "info", f"The {name} check failed on this log",
                f"{type(exc).__name__}: {exc}. The other checks ran; please report this with the log.",
                Evidence(metrics={}), [], source="counters", demotable=False, score=0.0)
    i.summary += " " + traceback.format_exc(limit=1).strip().splitlines()[-1]
    return i


def _demote_if_io_is_negligible(ctx, found: list) -> None:
    """The global post-pass (`common.demoted`, the fleet's too): demotable warnings become info when the
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


def _demote_if_io_is_hidden(ctx, found: list) -> None:
    """A traced training loop (a DFTracer trace's spans) that waits for I/O less than `loop_io_wait_share` of
    its time after its first batch hides the rest of its I/O behind compute: every warning about the I/O's speed
    becomes info, however much I/O the job does and however structural the pattern (a log without spans:
    nothing changes). The loop's own findings (source `spans`) judge the loop already; findings not about speed
    (correctness, completeness) stay."""
    speed = [i for i in found if i.severity in ("critical", "warning") and i.source != "spans"
             and _about_speed(i.code)]
    if not speed:
        return
    loop = ctx.loop
    if loop is None:
        return
    s = loop.summary
    if s["loop_time"] <= 0 or s["compute_time"] <= 0:
        return  # no compute in the loop: nothing the I/O could hide behind
    share = s["io_wait"] / s["loop_time"]
    if share >= ctx.th.loop_io_wait_share:
        return
    who = ctx.rank_labels(loop.ranks)
    for i in speed:
        i.severity = "info"
        i.summary += (f" (Shown as info: the training loop ({who}) waits for I/O only {fmt_pct(share)} of its "
                      f"time after its first batch; the rest of the I/O overlaps its compute, so fixing this "
                      "cannot speed the job up noticeably.)")


def _about_speed(code: str) -> bool:
    saving = finding(code).saving
    return saving is None or saving.speed
