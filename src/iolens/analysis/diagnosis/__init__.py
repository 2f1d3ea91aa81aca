"""Diagnosis: from what the trace and counters show to which tuning knob fixes it.

    from iolens.analysis.diagnosis import diagnose
    for insight in diagnose(iolens.read("job.darshan")):
        print(insight.severity, insight.code, insight.title)

`diagnose(log, thresholds=None)` returns `Insight`s sorted most severe first; `Insight.to_dict()` is the
stable JSON shape documented in docs/diagnosis.md (`SCHEMA_VERSION`). Each insight code is one module of
`findings/` (the registry: `FINDINGS`); `engine.py` runs them on a log, `batch.py` over a fleet's features.
"""
from __future__ import annotations

from .context import Context
from .engine import diagnose_context
from .findings import CODES, DEFINITIONS, FINDINGS, JSON_SCHEMA, KEY_METRICS, RULES
from .insight import SCHEMA_VERSION, SEVERITIES, Evidence, Insight, Recommendation
from .thresholds import Thresholds, load_config, parse_assignment

__all__ = ["diagnose", "diagnose_context", "Context", "Insight", "Evidence", "Recommendation", "Thresholds", "CODES",
           "KEY_METRICS", "SEVERITIES", "SCHEMA_VERSION", "JSON_SCHEMA", "DEFINITIONS", "FINDINGS", "RULES",
           "load_config", "parse_assignment"]


def diagnose(log, thresholds=None, strict: bool = False) -> list:
    """Every insight iolens finds in `log`, most severe first.

    thresholds: a `Thresholds`, or a dict of overrides {name: value} (see `DEFINITIONS`).
    strict: re-raise a failing finding instead of reporting it as a CHECK_FAILED insight (tests use this).
    """
    th = thresholds if isinstance(thresholds, Thresholds) else Thresholds(thresholds or {})
    return diagnose_context(Context(log, th), strict=strict)
