"""A finding's rule as polars stages: evaluated over one log's features, or over a fleet batch of many.

A rule is a dict {stage: expression}; each stage is a column `stage_name(code, stage)` that the later stages
read through `stage(code, name)`, so that no expression repeats another (a million rows in seconds). The same
stages judge one log (`evaluate`, the diagnosis) and a features table (`with_stages`, the fleet).
"""
from __future__ import annotations

import polars as pl

from .common import demoted, under_noise

SERIOUS = ("critical", "warning")


class RuleError(ValueError):
    """A threshold value the stored features cannot answer (one line)."""


def stage_name(code: str, name: str) -> str:
    return f"_{code}.{name}"


def stage(code: str, name: str) -> pl.Expr:
    """The column of stage `name` of `code`'s rule."""
    return pl.col(stage_name(code, name))


def superseded_name(part: str | None) -> str:
    return "superseded" if part is None else f"superseded_{part}"


def superseded(code: str, part: str | None = None) -> pl.Expr:
    """The stage saying that another finding restates `code` (its `part`): a rule reads it to drop that part
    (`Supersedes`); true where a superseding finding's condition holds."""
    return stage(code, superseded_name(part))


def rule_stages(finding, th, supersedes=()) -> dict:
    """`finding`'s rule under `th` with the verdicts of the findings superseding it (`supersedes`: the
    `Supersedes` naming it) as stages: each before the first stage reading it, else last (the engine and
    `with_stages` then drop the insight where it holds). One verdict per part: its conditions or'ed."""
    stages = finding.rule(th)
    verdicts = {}
    for s in supersedes:
        name = superseded_name(s.part)
        when = s.when(th).fill_null(False)
        verdicts[name] = verdicts[name] | when if name in verdicts else when
    for name in _read_verdicts(finding.code, stages):
        verdicts.setdefault(name, pl.lit(False))  # a rule's part no finding supersedes (yet)
    out = {}
    for name, expr in stages.items():
        for v in [v for v in verdicts if stage_name(finding.code, v) in expr.meta.root_names()]:
            out[v] = verdicts.pop(v)
        out[name] = expr
    out = {**out, **verdicts}
    if finding.saving_rule is not None:  # the expected saving, and whether it is under the noise
        for part, expr in finding.saving_rule(th).items():
            name = saving_name(part)
            out[name] = expr
            out[noisy_name(part)] = under_noise(stage(finding.code, name), th)
    return out


def saving_name(part: str | None) -> str:
    return "saving" if part is None else f"saving_{part}"


def noisy_name(part: str | None) -> str:
    return "noisy" if part is None else f"noisy_{part}"


def quiet(severity: pl.Expr, noisy: pl.Expr) -> pl.Expr:
    """A critical or warning whose fix would save under the noise of two identical runs is info."""
    return pl.when(noisy & severity.is_in(list(SERIOUS))).then(pl.lit("info")).otherwise(severity)


def _read_verdicts(code: str, stages: dict) -> list:
    prefix = stage_name(code, "superseded")
    return sorted({n[len(stage_name(code, "")):] for e in stages.values() for n in e.meta.root_names()
                   if n.startswith(prefix)})


def dropped(finding, stages: dict) -> dict:
    """part (None: every part) -> the verdict that drops it, for the verdicts `finding`'s rule does not read."""
    read = set(_read_verdicts(finding.code, {k: v for k, v in stages.items() if not k.startswith("superseded")}))
    out = {}
    for name in stages:
        if name.startswith("superseded") and name not in read:
            out[None if name == "superseded" else name[len("superseded_"):]] = name
    return out


def severity_of(finding, stages: dict, part: str | None = None) -> pl.Expr:
    """The stage `severity` (of `part`), null where a superseding finding's verdict drops it."""
    severity = stage(finding.code, "severity" if part is None else f"severity_{part}")
    for p, name in dropped(finding, stages).items():
        if p is None or p == part:
            severity = pl.when(stage(finding.code, name)).then(pl.lit(None, pl.String)).otherwise(severity)
    for name in (noisy_name(part), noisy_name(None)) if part is not None else (noisy_name(None),):
        if name in stages:
            return quiet(severity, stage(finding.code, name))
    return severity


# --- one log ----------------------------------------------------------------------------------------
def evaluate(values: dict, exprs: dict, dtypes: dict, code: str = "") -> dict:
    """Stages `exprs` evaluated on one log's features (a batch of one): name -> Python value. A feature the
    stages read but the log did not compute (a branch not taken) is null (`dtypes`: the columns' types,
    Float64 for others). Only the features the stages read are built; stages reading each other are added one
    level at a time (`_stages`)."""
    prefix = stage_name(code, "")
    roots = {n for e in exprs.values() for n in e.meta.root_names()}
    names = {n for n in roots if not (code and n.startswith(prefix))}
    frame = pl.DataFrame({n: pl.Series(n, [values.get(n)], dtype=dtypes.get(n, pl.Float64)) for n in names})
    if len(names) == len(roots):  # no stage reads another: one query
        return frame.select(**exprs).row(0, named=True)
    frame = _stages(frame, code, exprs).select([stage_name(code, k) for k in exprs])
    return dict(zip(exprs, frame.row(0)))  # lists as lists


def judged_severities(finding, stages: dict, judged: dict) -> dict:
    """part (None without parts) -> the severity of `judged` (the values of `stages` on one log), None where
    a superseding finding's verdict drops it."""
    parts = finding.parts or (None,)
    drops = dropped(finding, stages)
    out = {}
    for part in parts:
        severity = judged["severity" if part is None else f"severity_{part}"]
        if any(judged[name] for p, name in drops.items() if p is None or p == part):
            severity = None
        if severity in SERIOUS and noisy(judged, part):
            severity = "info"
        out[part] = severity
    return out


def noisy(judged: dict, part: str | None) -> bool:
    """Did the rule find the expected saving of `part` (or of the whole finding) under the noise?"""
    for name in (noisy_name(part), noisy_name(None)) if part is not None else (noisy_name(None),):
        if name in judged:
            return bool(judged[name])
    return False


# --- a batch ----------------------------------------------------------------------------------------
def with_stages(frame, finding, th, supersedes=(), stages: dict | None = None):
    """`frame` (Data or LazyFrame) with each stage of `finding`'s rule (or of `stages`) as a column, in order,
    then its `insight` (its most severe insight after the demotion), its `score` and `best` part (for the
    headline) and `serious` (how many of its insights are critical or warning)."""
    code, parts = finding.code, finding.parts
    stages = rule_stages(finding, th, supersedes) if stages is None else stages
    frame = _stages(frame, code, stages)
    if not parts:
        # a rule writing several insights of one severity counts them (`count`): the demotion moves them all
        count = stage(code, "count") if "count" in stages else pl.lit(1, pl.Int64)
        return _stages(frame, code, {"insight": demoted(severity_of(finding, stages), ~stage(code, "strong"), th),
                                     "best": pl.lit(None, pl.String),
                                     "serious": stage(code, "insight").is_in(SERIOUS).fill_null(False).cast(pl.Int64)
                                     * count})
    # several insights: the code's column is the first in the diagnosis's order (severity, then score, then
    # the order the finding wrote them in)
    for p in parts:
        frame = _stages(frame, code, {f"insight_{p}": demoted(severity_of(finding, stages, p),
                                                             ~stage(code, f"strong_{p}"), th)})
    frame = _stages(frame, code, {"insight": stage(code, f"insight_{parts[0]}"),
                                  "score": stage(code, f"score_{parts[0]}"), "best": pl.lit(parts[0])})
    for p in parts[1:]:
        r_p, r_b = _rank(stage(code, f"insight_{p}")), _rank(stage(code, "insight"))
        better = (r_p.is_not_null() & (r_b.is_null() | (r_p < r_b) | (
            (r_p == r_b) & (stage(code, f"score_{p}") > stage(code, "score"))))).fill_null(False)
        frame = _stages(frame, code, {"better": better})
        better = stage(code, "better")
        frame = _stages(frame, code, {
            "insight": pl.when(better).then(stage(code, f"insight_{p}")).otherwise(stage(code, "insight")),
            "score": pl.when(better).then(stage(code, f"score_{p}")).otherwise(stage(code, "score")),
            "best": pl.when(better).then(pl.lit(p)).otherwise(stage(code, "best"))})
    serious = pl.sum_horizontal([stage(code, f"insight_{p}").is_in(SERIOUS).fill_null(False).cast(pl.Int64)
                                 for p in parts])
    return _stages(frame, code, {"serious": serious})


def _rank(severity: pl.Expr) -> pl.Expr:
    return severity.replace_strict({"critical": 0, "warning": 1, "info": 2, "ok": 3}, default=None,
                                   return_dtype=pl.Int64)


def drop_stages(frame, codes):
    prefixes = tuple(stage_name(c, "") for c in codes)
    return frame.drop([n for n in frame.collect_schema().names() if n.startswith(prefixes)])


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
