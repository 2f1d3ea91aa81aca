"""What a diagnosis returns: insights with evidence and recommendations, and their JSON schema.

The codes, severities and the dictionary shape of `Insight.to_dict()` are part of iolens' interface
(`iolens diagnose --json`, the HTML report). Add fields only; never rename or remove one without
bumping `SCHEMA_VERSION`. (A new optional key, absent where it has nothing to say, such as `skipped` and
`empty` at the top level, leaves every earlier document valid and unchanged: no bump.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

SCHEMA_VERSION = 3  # 2: + key_metric (the insight's headline number, for compare and fleet)
# 3: + recommendations[].expected_saving, .saving_basis and .knobs (what a fix should save, what to turn)
# and .try_now (the `iolens run --set` line that applies it to the unchanged program)

SEVERITIES = ("critical", "warning", "info", "ok")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
LANGUAGES = ("c", "shell", "text", "fortran", "ini", "python")
SOURCES = ("dxt", "counters", "spans")  # spans: a trace's application spans with its I/O (DFTracer)
# what a recommendation may need from the log (`Recommendation.needs`; how the diagnosis judges each: fit.py)
NEEDS = ("mpi", "mpiio", "hdf5", "netcdf", "lustre")

# code -> one line: what it means; code -> candidate metric names, first present wins: the insight's one headline
# number (`key_metric`), the one `iolens compare` shows before/after ("SMALL_IO: 160,000 → 0 small
# requests"). Both filled from the findings' modules by the registry (findings/__init__.py), which the
# diagnosis package imports before anything can make an Insight.
CODES: dict = {}
KEY_METRICS: dict = {}
HEALTHY: set = set()  # the codes whose insight says something works (`Finding.healthy`): compare's colours


@dataclass
class Recommendation:
    title: str
    detail: str = ""
    snippet: str = ""
    language: str = "text"
    # seconds of the slowest rank's I/O time this fix should save on this run (None: not estimated), and how
    # that number was derived (savings.py); the runtime knobs it turns: [{"name": "romio.cb_nodes", "value": "8"}]
    expected_saving: float | None = None
    saving_basis: str = ""
    knobs: list = field(default_factory=list)
    try_now: str = ""  # the `iolens run --set ...` line that applies it to the unchanged program, if one can
    # not serialized: the layers it only makes sense with (NEEDS). The diagnosis drops it from a log that shows
    # one missing, and where the log cannot tell, its detail starts with why it may still apply (fit.py)
    needs: tuple = ()
    # the kind of change it makes, which prices its saving (fixes.py: "collective:write", "sync_less", ...; ""
    # for the finding's own `saving`); not serialized
    fix: str = ""

    def __post_init__(self):
        if self.language not in LANGUAGES:
            raise ValueError(f"unknown snippet language {self.language!r}")
        unknown = [n for n in self.needs if n not in NEEDS]
        if unknown or isinstance(self.needs, str):
            raise ValueError(f"unknown needs {self.needs!r} (one of {', '.join(NEEDS)})")

    def to_dict(self) -> dict:
        saving = None if self.expected_saving is None else _number(max(float(self.expected_saving), 0.0))
        return {"title": self.title, "detail": self.detail, "snippet": self.snippet, "language": self.language,
                "expected_saving": saving, "saving_basis": self.saving_basis,
                "knobs": [{"name": str(k["name"]), "value": str(k["value"])} for k in self.knobs],
                "try_now": self.try_now}


@dataclass
class Evidence:
    ranks: list = field(default_factory=list)
    files: list = field(default_factory=list)
    time_window: tuple | None = None
    metrics: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        window = None
        if self.time_window is not None:
            t0, t1 = (float(t) for t in self.time_window)
            if math.isfinite(t0) and math.isfinite(t1):
                window = [round(min(t0, t1), 6), round(max(t0, t1), 6)]
        return {
            "ranks": [int(r) for r in self.ranks],
            "files": [str(f) for f in self.files],
            "time_window": window,
            "metrics": {str(k): _number(v) for k, v in self.metrics.items() if _number(v) is not None},
        }


@dataclass
class Insight:
    code: str
    severity: str
    title: str
    summary: str
    evidence: Evidence = field(default_factory=Evidence)
    recommendations: list = field(default_factory=list)
    source: str = "counters"
    partial: bool = False
    # not serialized: orders insights of the same severity (bigger = more important), and whether a low
    # I/O share of the run time may demote it to info
    score: float = 0.0
    demotable: bool = True

    def __post_init__(self):
        if self.code not in CODES:
            raise ValueError(f"unknown insight code {self.code!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")
        if self.source not in SOURCES:
            raise ValueError(f"unknown source {self.source!r}")

    @property
    def key_metric(self):
        """The name of the headline metric in `evidence.metrics` (see KEY_METRICS), or None."""
        metrics = self.evidence.to_dict()["metrics"]
        return next((k for k in KEY_METRICS.get(self.code, ()) if k in metrics), None)

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "key_metric": self.key_metric,
            "severity": self.severity,
            "title": self.title,
            "summary": self.summary,
            "evidence": self.evidence.to_dict(),
            "recommendations": [r.to_dict() for r in self.recommendations],
            "source": self.source,
            "partial": bool(self.partial),
        }


def _number(value):
    """Metrics are plain JSON numbers: ints stay ints, floats are rounded, NaN/inf are dropped."""
    if value is None or isinstance(value, bool):
        return None if value is None else int(value)
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, int):
        return value
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value):
        return None
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    return float(f"{value:.6g}")


def sort_key(insight: Insight):
    return (SEVERITY_RANK[insight.severity], -insight.score, insight.code)


# `iolens diagnose --json`'s JSON Schema; docs/diagnosis.md shows it with an example.
_RECOMMENDATION_SCHEMA = {
    "type": "object",
    "required": ["title", "detail", "snippet", "language", "expected_saving", "saving_basis", "knobs", "try_now"],
    "properties": {
        "title": {"type": "string"},
        "detail": {"type": "string"},
        "snippet": {"type": "string"},
        "language": {"enum": list(LANGUAGES)},
        "expected_saving": {"oneOf": [{"type": "null"}, {"type": "number", "minimum": 0}]},
        "saving_basis": {"type": "string"},
        "knobs": {"type": "array", "items": {"type": "object", "required": ["name", "value"],
                                             "properties": {"name": {"type": "string", "pattern": "^[a-z]+[.]"},
                                                            "value": {"type": "string"}}}},
        "try_now": {"type": "string"},
    },
}
def json_schema(codes) -> dict:
    """The JSON Schema (draft 2020-12) of `iolens diagnose --json` with these insight codes."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "iolens diagnose --json",
        "type": "object",
        "required": ["log", "schema_version", "insights"],
        "properties": {
            "log": {"type": "string"},
            "schema_version": {"const": SCHEMA_VERSION},
            # the job's measures as `info --json` prints them (analysis.summary.job_measures); added by issue 19
            "measures": {"type": "object", "required": ["io_time", "slowest_rank_io_time", "busy_io_time",
                                                        "dxt_segments", "dxt_coverage", "dxt_truncated",
                                                        "collective_share"]},
            "insights": {"type": "array", "items": insight_schema(codes)},
            # issue 31: present only when there is something to say (additive: no version bump). The I/O of the
            # modules iolens does not model (DFS, DAOS, ...): numbers null where their records cannot be read
            "skipped": {"type": "array", "items": {
                "type": "object",
                "required": ["module", "records", "reads", "writes", "bytes_read", "bytes_written", "io_time"],
                "properties": {"module": {"type": "string"},
                               **{k: {"oneOf": [{"type": "null"}, {"type": "integer", "minimum": 0}]}
                                  for k in ("records", "reads", "writes", "bytes_read", "bytes_written")},
                               "io_time": {"oneOf": [{"type": "null"}, {"type": "number", "minimum": 0}]}}}},
            # the log holds no record at all (nothing was diagnosed)
            "empty": {"const": True},
        },
    }


def insight_schema(codes) -> dict:
    return {
        "type": "object",
        "required": ["code", "key_metric", "severity", "title", "summary", "evidence", "recommendations", "source",
                     "partial"],
        "properties": {
            "code": {"type": "string", "enum": list(codes)},
            "key_metric": {"oneOf": [{"type": "null"}, {"type": "string"}]},
            "severity": {"enum": list(SEVERITIES)},
            "title": {"type": "string"},
            "summary": {"type": "string"},
            "evidence": {
                "type": "object",
                "required": ["ranks", "files", "time_window", "metrics"],
                "properties": {
                    "ranks": {"type": "array", "items": {"type": "integer"}},
                    "files": {"type": "array", "items": {"type": "string"}},
                    "time_window": {"oneOf": [{"type": "null"}, {"type": "array", "items": {"type": "number"},
                                                                  "minItems": 2, "maxItems": 2}]},
                    "metrics": {"type": "object", "additionalProperties": {"type": "number"}},
                },
            },
            "recommendations": {"type": "array", "items": _RECOMMENDATION_SCHEMA},
            "source": {"enum": list(SOURCES)},
            "partial": {"type": "boolean"},
        },
    }
