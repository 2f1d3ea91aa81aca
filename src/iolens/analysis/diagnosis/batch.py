"""The rule findings over many jobs: the features a fleet row stores, and the rules evaluated over a batch.

`fleet build` stores each log's rule features (`features_of`) and evaluates the rules over the batch;
`fleet report -t` evaluates them over the stored table (`with_rule`), without a log. The same stages judge
one log in the diagnosis (engine.py).

    from iolens.analysis.diagnosis.batch import evaluate
    jobs_with_insights = evaluate(features_frame, Thresholds({"small_request_bytes": 65536}))
"""
from __future__ import annotations

import functools

from .common import COMMON_FEATURES, COMMON_THRESHOLDS, common_features
from .findings import FINDINGS, RULES, SUPERSEDED, supersedes_of
from .stages import RuleError, drop_stages, rule_stages, stage, with_stages

__all__ = ["RULES", "RuleError", "features_of", "feature_dtypes", "feature_names", "feature_sources", "evaluate",
           "with_rule", "stale_expr", "rule_only", "check_store", "stage_names", "title_of", "read_by", "common_features"]


def feature_sources() -> list:
    """(name, features(ctx), dtypes()) of every part of a fleet row: each rule finding's features, then the
    relations of the findings superseding a rule finding (a failing part leaves its columns null)."""
    out = [(code, f.features, f.dtypes) for code, f in RULES.items()]
    for code in RULES:
        for by, s in SUPERSEDED.get(code, ()):
            if s.features is not None:
                out.append((f"{by} supersedes {code}", s.features, s.dtypes))
    return out


def features_of(ctx) -> dict:
    """Every rule feature of one log for a fleet row: the common ones, each rule finding's, the relations."""
    row = common_features(ctx)
    for _, features, _ in feature_sources():
        row.update(features(ctx))
    return row


def feature_dtypes() -> dict:
    """{column: polars dtype} of every rule feature a fleet row holds, in the store's column order."""
    return dict(_feature_dtypes())


@functools.cache
def feature_names() -> tuple:
    """The columns of `feature_dtypes`, in order (made once per process: a fleet row is assembled per log)."""
    return tuple(_feature_dtypes())


@functools.cache
def _feature_dtypes() -> dict:
    out = dict(COMMON_FEATURES)
    for _, _, dtypes in feature_sources():
        out.update(dtypes())
    return out


def with_rule(frame, code: str, th):
    """`frame` with the stages of `code`'s rule under `th` (the verdicts of the findings superseding it
    included) and its `insight`, `score`, `best` and `serious` (`stages.with_stages`)."""
    return with_stages(frame, RULES[code], th, supersedes_of(code))


def evaluate(frame, th, codes=None):
    """`frame` (a DataFrame or LazyFrame of feature rows) with each rule code's `insight_CODE` column."""
    codes = list(codes or RULES)
    for code in codes:
        frame = with_rule(frame, code, th).with_columns(stage(code, "insight").alias(f"insight_{code}"))
    return drop_stages(frame, codes)


def stale_expr(code: str, th):
    """Rows whose stored features cannot answer `th` for `code` (its own, or a superseding relation's), or
    None when every row can."""
    parts = [RULES[code].stale] + [s.stale for s in supersedes_of(code)]
    exprs = [p(th) for p in parts if p is not None]
    if not exprs:
        return None
    out = exprs[0]
    for e in exprs[1:]:
        out = out | e
    return out


def check_store(th) -> None:
    """Raise RuleError when no stored features table can answer `th` (a finding's `unanswerable`)."""
    for f in RULES.values():
        reason = f.unanswerable(th) if f.unanswerable is not None else None
        if reason:
            raise RuleError(reason)


def stage_names(code: str, th) -> list:
    """The names of the stages of `code`'s rule under `th` (what `title_of` reads)."""
    return list(rule_stages(RULES[code], th, supersedes_of(code)))


def title_of(code: str, values: dict, th) -> str:
    """The insight's title from the values of its rule's stages (a fleet row's headline title)."""
    return RULES[code].title(values, th)


def read_by(code: str) -> set:
    """The thresholds `code`'s finding reads: its own, those it names, those its superseders' relations read,
    and the judging ones every finding reads."""
    f = FINDINGS[code]
    names = {t.name for t in f.thresholds} | set(f.reads) | set(COMMON_THRESHOLDS)
    return names | {n for s in supersedes_of(code) for n in s.reads}


def rule_only(names) -> list:
    """Of threshold `names`, those only rule findings read (for a severity): a change of any other needs a
    rebuild for the per-log codes (the cost model's fs_* only change the projections' text, which the store
    has not)."""
    per_log = {n for code in FINDINGS if code not in RULES for n in read_by(code)}
    own = {n for code in RULES for n in read_by(code)} - per_log
    return [n for n in names if n in own]
