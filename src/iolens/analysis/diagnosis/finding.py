"""What a finding declares: its code, meaning, thresholds, rule, wording and what it supersedes.

One module of `findings/` per code holds one `FINDING = Finding(...)`; the registry (`findings/__init__.py`)
collects them, and the engine (`engine.py`) and the fleet (`batch.py`) run what they declare.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Threshold:
    """A number a finding compares against, settable with `-t name=value` or a [thresholds] table."""
    name: str
    default: float
    kind: str  # 'bytes' | 'share' | 'count' | 'ratio' | 'seconds': how a value is read and shown
    help: str  # one sentence for `--list-thresholds` and docs/diagnosis.md


@dataclass(frozen=True)
class Supersedes:
    """The declaring finding says what finding `code` says, more precisely: where `when` holds, `code`'s insight
    (only its `part`, when given) is dropped. Per log and over a fleet batch alike, `when` is a stage of `code`'s
    rule; a rule that reads it (`stages.superseded(code, part)`) decides what a part removes, otherwise the
    engine drops the code's insight."""
    code: str
    # (th) -> polars expression over a features row: both findings' columns, and the stages of `code`'s rule before
    # the first one that reads the verdict
    when: Callable
    part: str | None = None
    # the columns `when` reads that neither finding's own features hold: how the two relate on one log
    features: Callable | None = None  # (ctx) -> {column: value}
    dtypes: Callable | None = None  # () -> {column: polars dtype}
    stale: Callable | None = None  # (th) -> expression: rows whose stored relation cannot answer `th`
    reads: tuple = ()  # the thresholds `when` reads


@dataclass(frozen=True)
class Finding:
    """Everything about one insight code. Only `code`, `meaning` and `report` are required; a finding with a
    `rule` can also be judged over many jobs from stored features (`iolens fleet`)."""
    code: str  # SMALL_IO: the `code` of its insights
    meaning: str  # one line: what it means (`CODES`)
    # (ctx, verdict) -> [Insight]: the evidence and the wording. `verdict` is None for a finding without a rule,
    # else its features for this log and its rule's stages by name
    report: Callable
    key_metrics: tuple = ()  # candidate metric names, the first present is the insight's `key_metric`
    thresholds: tuple = ()  # the `Threshold`s it owns
    reads: tuple = ()  # the names of other thresholds it reads (shared ones, or another finding's)
    trigger: str = ""  # when it is raised, in Markdown (the catalogue of docs/diagnosis.md)
    source: str = ""  # where the evidence comes from ("dxt", "counters", ...), for the catalogue
    saving: Callable | None = None  # (ctx, insight) -> (seconds or None, basis) or None: what its fixes save
    # (th) -> {part or None: polars expression}: the expected saving (s) of its main fix from its features and
    # stages; under the noise of two identical runs (`common.noise`) a critical or warning becomes info
    saving_rule: Callable | None = None
    # the rule, shared by one log and a fleet batch
    features: Callable | None = None  # (ctx) -> {column: value}: a fleet row's features (columns prefixed)
    dtypes: Callable | None = None  # () -> {column: polars dtype} of `features`
    rule: Callable | None = None  # (th) -> {stage: polars expression}: severity, strong, score (or per part)
    # (ctx) -> one log's features at its thresholds, or None where the rule cannot find anything (no query);
    # default: `features`
    measure: Callable | None = None
    parts: tuple = ()  # one insight per part (write, read): its stages are severity_<part>, strong_<part>, ...
    title: Callable | None = None  # (stage values, th) -> the insight's title (the fleet's headline title)
    stale: Callable | None = None  # (th) -> expression: rows whose stored features cannot answer `th`
    unanswerable: Callable | None = None  # (th) -> why no stored features can answer `th`, or None
    supersedes: tuple = ()  # `Supersedes`: the findings it restates more precisely
    annotate: Callable | None = None  # (its insights, every insight) -> None: what it adds to others' text
    # its insight says something works (COLLECTIVE_IO: collective buffering reached the file system), not a
    # problem: `iolens compare` shows it appearing as good news and going as bad news
    healthy: bool = False

    @property
    def module(self) -> str:
        """The name of its module in findings/ (and of the check in a CHECK_FAILED insight)."""
        return self.code.lower()
