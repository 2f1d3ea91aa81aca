"""A declared `Supersedes` is applied by the framework, the same on one log (`stages.evaluate`, the diagnosis)
and over a batch (`stages.with_stages`, the fleet): on made-up findings and features."""
from __future__ import annotations

import polars as pl
import pytest

from iolens.analysis.diagnosis import Thresholds
from iolens.analysis.diagnosis.common import COMMON_FEATURES
from iolens.analysis.diagnosis.finding import Finding, Supersedes
from iolens.analysis.diagnosis.stages import (evaluate, judged_severities, rule_stages, stage, superseded,
                                              with_stages)

TH = Thresholds()


def _warn_over(column: str):
    """A rule: a warning where `column` is above 1 (never strong, scored by the column)."""
    def rule(th):
        x = pl.col(column)
        return {"severity": pl.when(x > 1).then(pl.lit("warning")), "strong": pl.lit(False), "score": x}
    return rule


def _parts_rule(th):
    """Two parts, `left` and `right`; `right` is dropped where a superseding finding says it (the rule reads its
    verdict), `left` never."""
    out = {}
    for part in ("left", "right"):
        x = pl.col(f"c_{part}")
        out[f"score_{part}"] = x  # (a verdict may read the stages before the first that reads it)
        found = x > 1
        if part == "right":
            found = found & ~superseded("C", "right")
        out.update({f"severity_{part}": pl.when(found).then(pl.lit("warning")), f"strong_{part}": pl.lit(False)})
    return out


B = Finding(code="B", meaning="m", report=None, rule=_warn_over("b_x"))
C = Finding(code="C", meaning="m", report=None, rule=_parts_rule, parts=("left", "right"))
# A restates B where a_x > 5 (the whole code), and C's right part where a_x equals C's own stage
A_OVER_B = Supersedes("B", when=lambda th: pl.col("a_x") > 5)
A_OVER_C = Supersedes("C", part="right", when=lambda th: pl.col("a_x") == stage("C", "score_right"))
DTYPES = {**COMMON_FEATURES, "a_x": pl.Float64, "b_x": pl.Float64, "c_left": pl.Float64, "c_right": pl.Float64}


def one_log(finding, supersedes, values: dict) -> dict:
    """What the engine does for one log: the rule's stages with the verdicts, evaluated once."""
    stages = rule_stages(finding, TH, supersedes)
    return judged_severities(finding, stages, evaluate(values, stages, DTYPES, finding.code))


def batch(finding, supersedes, rows: list) -> list:
    """What the fleet does: the same stages over a frame of rows; each row's insight column (per part)."""
    frame = pl.DataFrame(rows, schema={n: DTYPES[n] for n in rows[0]})
    frame = frame.with_columns(pl.lit(None, pl.Float64).alias(n) for n in COMMON_FEATURES)
    out = with_stages(frame, finding, TH, supersedes)
    parts = finding.parts or (None,)
    return [{p: row[f"_{finding.code}.insight" + (f"_{p}" if p else "")] for p in parts}
            for row in out.iter_rows(named=True)]


@pytest.mark.parametrize("row, expect", [
    ({"a_x": 0.0, "b_x": 2.0}, "warning"),  # B found, A's condition false: kept
    ({"a_x": 9.0, "b_x": 2.0}, None),  # A restates it: dropped
    ({"a_x": 9.0, "b_x": 0.0}, None),  # not found anyway
    ({"a_x": None, "b_x": 2.0}, "warning"),  # a null condition supersedes nothing
])
def test_a_whole_code_is_dropped_where_the_condition_holds(row, expect):
    assert one_log(B, (A_OVER_B,), row) == {None: expect}
    assert batch(B, (A_OVER_B,), [row]) == [{None: expect}]
    assert one_log(B, (), row) == {None: "warning" if row["b_x"] > 1 else None}  # without it: B's own verdict


@pytest.mark.parametrize("row, expect", [
    ({"a_x": 0.0, "c_left": 2.0, "c_right": 3.0}, {"left": "warning", "right": "warning"}),
    ({"a_x": 3.0, "c_left": 2.0, "c_right": 3.0}, {"left": "warning", "right": None}),  # only its part
    ({"a_x": 2.0, "c_left": 2.0, "c_right": 3.0}, {"left": "warning", "right": "warning"}),
])
def test_a_part_the_rule_reads_is_dropped_by_the_rule(row, expect):
    assert one_log(C, (A_OVER_C,), row) == expect
    assert batch(C, (A_OVER_C,), [row]) == [expect]


def test_the_verdict_is_a_stage_before_the_first_stage_reading_it():
    names = list(rule_stages(C, TH, (A_OVER_C,)))
    assert names.index("superseded_right") < names.index("severity_right")
    assert names[-1] == "strong_right"
    # a rule reading a verdict no finding declares yet reads false
    assert one_log(C, (), {"a_x": 3.0, "c_left": 0.0, "c_right": 3.0}) == {"left": None, "right": "warning"}
    # a verdict the rule does not read comes last: the framework drops the code's insight
    assert list(rule_stages(B, TH, (A_OVER_B,)))[-1] == "superseded"


def test_one_log_and_a_batch_agree_row_by_row():
    rows = [{"a_x": a, "b_x": b} for a in (0.0, 6.0, None) for b in (0.5, 2.0)]
    assert batch(B, (A_OVER_B,), rows) == [one_log(B, (A_OVER_B,), r) for r in rows]
