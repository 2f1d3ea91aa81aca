"""The jobs table's insight columns: the rule codes evaluated over many jobs, the per-log diagnosis for the rest.

The rule codes (the findings with a rule: `analysis.diagnosis.batch`) are column expressions over the rule
features a diagnosed build stores: the build evaluates them over each batch, `fleet report -t` over the stored
table, without a log. The other codes come from the per-log diagnosis (the trace-based findings), stored as
built. The headline is the most serious insight of both, in the diagnosis's own order (severity,
then score, then code), so a rebuild and a recomputation agree.
"""
from __future__ import annotations

import warnings

import polars as pl

from ..analysis.diagnosis import CODES, Context, batch, diagnose_context
from ..analysis.diagnosis.common import RUN_TIME, common_features
from ..analysis.diagnosis.stages import drop_stages, stage, stage_name
from ..errors import LogError

SERIOUS = ("critical", "warning")
PER_LOG = {"per_log_headline": pl.String, "per_log_headline_severity": pl.String,
           "per_log_headline_score": pl.Float64, "per_log_headline_title": pl.String, "per_log_insights": pl.Int64}
HEADLINE = ("headline", "headline_severity", "headline_title", "insights")
REBUILD = ("this store has no rule features (built before `fleet report -t`, or with --no-diagnose only): "
           "rebuild it with `iolens fleet build LOGS -o NEW_STORE` to change thresholds")


_PER_LOG_INSIGHTS = {f"insight_{c}": None for c in CODES if c not in batch.RULES}  # the per-log codes' columns


def log_columns(log, th) -> dict:
    """One log's rule features, and the per-log diagnosis without the rule findings: its insight columns and
    its own headline (`per_log_*`), which `with_insights` merges with the rule codes'."""
    out = dict(_PER_LOG_INSIGHTS)
    try:
        ctx = Context(log, th)
        row = common_features(ctx)
        for _, features, dtypes in batch.feature_sources():
            try:
                row.update(features(ctx))
            except Exception:  # noqa: BLE001 - as diagnose does: the finding failed, the others run
                row.update(dict.fromkeys(dtypes()))
                out["insight_CHECK_FAILED"] = "info"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            found = diagnose_context(ctx, skip=batch.RULES)
    except Exception as exc:  # noqa: BLE001 - the job's features are still worth a row
        return {**dict.fromkeys(batch.feature_dtypes()), **out, **dict.fromkeys(PER_LOG), "per_log_insights": 0,
                "diagnosis_error": f"{type(exc).__name__}: {exc}"}
    names = batch.feature_names()
    row = dict(zip(names, map(row.get, names)))  # one column order in every batch (the store's schema)
    for i in found:  # most severe first: keep the first severity seen per code
        key = f"insight_{i.code}"
        if out.get(key) is None:
            out[key] = i.severity
    top = next((i for i in found if i.severity in SERIOUS), None)
    row.update(out)  # (the row itself, not a copy of its few hundred columns)
    row.update({"per_log_headline": top.code if top else None,
                "per_log_headline_severity": top.severity if top else None,
                "per_log_headline_score": top.score if top else None,
                "per_log_headline_title": top.title if top else None,
                "per_log_insights": sum(i.severity in SERIOUS for i in found), "diagnosis_error": None})
    return row


def dtypes() -> dict:
    return {**batch.feature_dtypes(), **PER_LOG}


def has_features(jobs) -> bool:
    return RUN_TIME in jobs.collect_schema().names()


LAZY_ROWS = 20_000  # from this many rows the rules' stages run as one lazy query (10^6 jobs: 15 % faster)


def with_insights(jobs: pl.DataFrame, th, titles=None, keep_stale: bool = False) -> tuple:
    """(jobs with the rule codes' `insight_*` columns and the headline columns evaluated under `th`, a note
    of what was recomputed). `titles`: a mask of the rows whose headline title to write when it is a rule
    code's (None: every row; the page lists a few). `keep_stale`: rows whose stored features cannot answer
    `th` (a trace read at another threshold) keep their stored severity (`fleet report -t`)."""
    if not has_features(jobs):
        raise LogError(REBUILD, "jobs")
    batch.check_store(th)
    names = set(jobs.collect_schema().names())
    # a code whose features this store has not (built by an iolens before it was a rule) stays as built
    codes = [c for c, r in batch.RULES.items() if set(r.dtypes()) <= names]
    missing = [c for c in batch.RULES if c not in codes]
    stale = {}
    # one lazy plan of every rule's stages on a store; a rule level at a time on a build's batch, where
    # planning that query (~0.15 s whatever the rows) cost twice the eager steps
    staged = jobs.lazy() if jobs.height >= LAZY_ROWS else jobs
    for code in codes:
        staged = batch.with_rule(staged, code, th)
    staged = staged.collect() if isinstance(staged, pl.LazyFrame) else staged
    cols = []
    for code in codes:
        severity, old = stage(code, "insight"), f"insight_{code}"
        s = batch.stale_expr(code, th) if keep_stale else None
        if s is not None and old in jobs.columns:
            n = int(staged.select(s.sum()).item() or 0)
            if n:
                stale[code] = n
                severity = pl.when(s).then(pl.col(old)).otherwise(severity)
        serious = stage(code, "serious")
        if s is not None and code in stale:
            serious = pl.when(s).then(pl.col(old).is_in(SERIOUS).fill_null(False).cast(pl.Int64)).otherwise(serious)
        cols += [severity.alias(old), stage(code, "score").alias(f"_score_{code}"),
                 serious.alias(f"_serious_{code}")]
    jobs = staged.with_columns(*cols)
    jobs = _headline(jobs, codes, th, titles)
    jobs = drop_stages(jobs, codes)
    changed = th.changed()
    own = batch.rule_only(changed)
    note = {"thresholds": dict(changed),
            "recomputed": [f"insight_{c}" for c in codes] + list(HEADLINE),
            "per_log": [f"insight_{c}" for c in CODES if c not in codes],
            "not_in_store": missing,
            "per_log_thresholds": [n for n in changed if n not in own and not n.startswith("fs_")],
            "stale": stale}
    return jobs, note


def _rank(sev: pl.Expr) -> pl.Expr:
    return sev.replace_strict({"critical": 0, "warning": 1}, default=None, return_dtype=pl.Int64)


def _headline(jobs: pl.DataFrame, codes: list, th, titles) -> pl.DataFrame:
    """Merge the per-log headline with the rule codes', one code at a time (the diagnosis's sort key), on the
    columns it reads (a step over the whole table costs per column: a batch's table has ~600)."""
    reads = ["per_log_headline", "per_log_headline_severity", "per_log_headline_score", "per_log_headline_title",
             "diagnosed", "per_log_insights", *[f"{k}_{c}" for c in codes for k in ("insight", "_score", "_serious")]]
    whole, jobs = jobs, jobs.select(reads)
    jobs = jobs.with_columns(pl.col("per_log_headline").alias("headline"),
                             pl.col("per_log_headline_severity").alias("headline_severity"),
                             pl.col("per_log_headline_score").alias("_score"),
                             pl.col("per_log_headline_title").alias("headline_title"))
    code, sev, score = pl.col("headline"), pl.col("headline_severity"), pl.col("_score")
    for c in codes:
        s_c, sc = pl.col(f"insight_{c}"), pl.col(f"_score_{c}")
        r_c, r_b = _rank(s_c), _rank(sev)
        better = (r_c.is_not_null() & (code.is_null() | (r_c < r_b) | (
            (r_c == r_b) & ((sc > score) | ((sc == score) & (pl.lit(c) < code)))))).fill_null(False)
        jobs = jobs.with_columns(pl.when(better).then(pl.lit(c)).otherwise(code).alias("headline"),
                                 pl.when(better).then(s_c).otherwise(sev).alias("headline_severity"),
                                 pl.when(better).then(sc).otherwise(score).alias("_score"),
                                 pl.when(better).then(pl.lit(None, pl.String)).otherwise(pl.col("headline_title"))
                                 .alias("headline_title"))
    serious = pl.sum_horizontal([pl.col(f"_serious_{c}") for c in codes])
    diagnosed = pl.col("diagnosed").fill_null(False)
    jobs = jobs.with_columns(pl.when(diagnosed).then(pl.col("per_log_insights").fill_null(0) + serious)
                             .alias("insights"))
    merged = jobs.select("headline", "headline_severity", "headline_title", "insights")
    jobs = whole.drop([f"_{k}_{c}" for c in codes for k in ("score", "serious")]).with_columns(merged)
    return _titles(jobs, codes, th, titles)


def _titles(jobs: pl.DataFrame, codes: list, th, titles) -> pl.DataFrame:
    """The headline title of rows whose headline is a rule code: the check's own title from the rule's values."""
    want = pl.col("headline").is_in(codes).fill_null(False)
    if titles is not None:
        want = want & titles
    names = [n for n in jobs.columns if n.startswith(tuple(stage_name(c, "") for c in codes))]
    index = (jobs.select(want.alias("_want"), "headline", *names).with_row_index("_row")  # not every column
             .filter(pl.col("_want")))
    if index.is_empty():
        return jobs
    text = [None] * jobs.height
    for code in codes:
        part = index.filter(pl.col("headline") == code)
        if part.is_empty():
            continue
        names = batch.stage_names(code, th)
        values = part.select(pl.col("_row"), *[stage(code, k).alias(k) for k in [*names, "best"]])
        for v in values.iter_rows(named=True):
            text[v["_row"]] = batch.title_of(code, v, th)
    filled = pl.Series("_title", text, dtype=pl.String)
    return jobs.with_columns(pl.coalesce(pl.col("headline_title"), filled).alias("headline_title"))
