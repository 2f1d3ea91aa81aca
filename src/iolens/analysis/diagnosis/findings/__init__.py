"""The registry of findings: one module per insight code in this folder, each declaring `FINDING = Finding(...)`.

Adding a finding is adding a module here (modules whose name starts with "_" hold what several findings
share). Everything else is derived from the modules found:

    FINDINGS     code -> Finding, by code (the diagnosis runs them in this order; its output is sorted)
    RULES        code -> Finding of those with a rule (the codes the fleet judges from stored features)
    CODES        code -> what it means (`CHECK_FAILED`, the engine's own, last)
    KEY_METRICS  code -> the candidate metric names of its headline number
    HEALTHY      the codes whose insight says something works (compare shows them appearing in green)
    DEFINITIONS  every Threshold: the shared ones (common.py), then each finding's
    SUPERSEDED   code -> [(superseding code, Supersedes)]
    JSON_SCHEMA  the JSON Schema of `iolens diagnose --json`
"""
from __future__ import annotations

import importlib
import pkgutil

from ..common import SHARED_THRESHOLDS
from ..finding import Finding
from ..insight import CODES, HEALTHY, KEY_METRICS, json_schema
from ..savings import not_speed

CHECK_FAILED = Finding(
    code="CHECK_FAILED",
    meaning="One of iolens' checks could not run on this log (a bug: please report it).",
    trigger="(info) a finding raised an exception on this log (a bug in iolens); the others still ran.",
    source="—",
    report=lambda ctx, verdict: [],
    saving=not_speed("not a speed fix"),
)


def discover(path=__path__, package: str = __name__) -> dict:
    """code -> Finding of every module of the folder `path` (package `package`; not the modules starting with
    "_"), by code. A module without a `FINDING`, or whose name is not its code's, raises."""
    found = {}
    for info in pkgutil.iter_modules(path):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        finding = getattr(module, "FINDING", None)
        if not isinstance(finding, Finding):
            raise TypeError(f"{info.name}.py declares no FINDING = Finding(...)")
        if finding.module != info.name:
            raise ValueError(f"{info.name}.py declares {finding.code}: its module must be {finding.module}.py")
        found[finding.code] = finding
    return dict(sorted(found.items()))


def definitions(findings: dict) -> tuple:
    """The shared thresholds, then each finding's; a name defined twice, or read and never defined, raises."""
    out = list(SHARED_THRESHOLDS)
    for f in findings.values():
        out += f.thresholds
    names = [t.name for t in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"thresholds defined more than once: {', '.join(twice)}")
    read = {n for f in findings.values() for n in (*f.reads, *(r for s in f.supersedes for r in s.reads))}
    unknown = sorted(read - set(names))
    if unknown:
        raise ValueError(f"thresholds read but defined nowhere: {', '.join(unknown)}")
    return tuple(out)


def superseded(findings: dict) -> dict:
    """code -> [(superseding code, Supersedes)] for every declared `supersedes`; an unknown code raises."""
    out: dict = {}
    for f in findings.values():
        for s in f.supersedes:
            if s.code not in findings:
                raise ValueError(f"{f.code} supersedes {s.code}, which is no finding")
            out.setdefault(s.code, []).append((f.code, s))
    return out


FINDINGS = discover()
RULES = {code: f for code, f in FINDINGS.items() if f.rule is not None}
CODES.update({code: f.meaning for code, f in (*FINDINGS.items(), (CHECK_FAILED.code, CHECK_FAILED))})
KEY_METRICS.update({code: f.key_metrics for code, f in (*FINDINGS.items(), (CHECK_FAILED.code, CHECK_FAILED))})
HEALTHY.update(code for code, f in FINDINGS.items() if f.healthy)
DEFINITIONS = definitions(FINDINGS)
SUPERSEDED = superseded(FINDINGS)
JSON_SCHEMA = json_schema(CODES)


def finding(code: str) -> Finding:
    """The finding of `code` (CHECK_FAILED included)."""
    return CHECK_FAILED if code == CHECK_FAILED.code else FINDINGS[code]


def supersedes_of(code: str) -> tuple:
    """The `Supersedes` declared against `code`."""
    return tuple(s for _, s in SUPERSEDED.get(code, ()))
