"""The end of a study: compare's verdict on best against baseline, the knobs that mattered, and the files
of the study folder (trials.parquet, model.json, best.hints / best.env / best.sh / best.toml, tune.html)."""
from __future__ import annotations

import json
import math
import shlex
import statistics
from pathlib import Path

import polars as pl

from ..analysis.compare import NOISE_RATIO, NOISE_SECONDS, noise_rule, verdict
from ..output import whole_file, write_text
from . import space as spaces

SCHEMA_VERSION = 1
TRIAL_COLUMNS = ("trial", "role", "chosen_by", "status", "reason", "objective", "io_time", "wall", "run_time",
                 "predicted", "expected_saving", "log")


def finish(state, nothing: str | None = None) -> dict:
    records = state.records()
    objective = state.options.objective
    measure = "io_time" if objective == "io" else "wall"
    base = [r for r in records if r["role"] == "baseline" and r["status"] == "ok"]
    conf = [r for r in records if r["role"] == "confirm" and r["status"] == "ok"]
    result = {"schema_version": SCHEMA_VERSION, "study": str(state.folder), "command": list(state.command),
              "objective": objective, "budget": state.options.budget, "repeats": state.options.repeats,
              "runs": len(records), "failed": sum(r["status"] == "failed" for r in records),
              "space": state.space.to_dict() if state.space else None, "nothing_to_tune": nothing,
              "baseline": _side(base, measure), "best": None, "rule": None, "verdict": None,
              "knobs_that_mattered": [], "model": state.fit.to_dict() if state.fit else None}
    if conf:
        rule = noise_rule([r[measure] for r in base], NOISE_RATIO, NOISE_SECONDS, measure)  # compare's rule
        result["rule"] = rule
        result["verdict"] = verdict(rule, statistics.median(r[measure] for r in conf))
        config = conf[0]["config"]
        result["best"] = {**_side(conf, measure), "config": config,
                          "changed": {k: v for k, v in config.items() if v != state.space.baseline().get(k)},
                          "command": conf[0]["command"], "env": conf[0]["env"], "hints": conf[0]["hints"]}
        result["knobs_that_mattered"] = knob_effects(records, state.space, config, measure, rule)
    elif not nothing:
        result["verdict"] = None
        result["reason"] = "no confirmation run finished (see the failed trials)"
    result["files"] = write_files(state, records, result)
    write_text(Path(state.folder) / "result.json", json.dumps(result, indent=2, default=str) + "\n")
    return result


def _side(rows: list, measure: str) -> dict:
    values = [r[measure] for r in rows]
    return {"runs": len(rows), "trials": [r["trial"] for r in rows],
            "median": statistics.median(values) if values else None,
            "io_time": [r["io_time"] for r in rows], "wall": [r["wall"] for r in rows]}


def knob_effects(records: list, space, best: dict, measure: str, rule: dict) -> list:
    """Per knob the best configuration sets: the median objective of the runs without its best value over
    that of the runs with it, and whether that is beyond compare's noise band. Knobs are taken greedily,
    each measured among the runs that share the best values of the knobs found to matter before it (so a
    knob that only rode along with the one that mattered is not credited); among knobs beyond the noise,
    the one whose split of the runs explains most of their spread in log(objective) first."""
    ok = [r for r in records if r["status"] == "ok"]
    base = space.baseline()
    left = [name for name, value in best.items() if value != base.get(name)]
    fixed, out = {}, []
    while left:
        pool = [r for r in ok if all(r["config"].get(k) == v for k, v in fixed.items())]
        effects = [_effect(pool, name, best[name], measure, rule) for name in left]
        # the knob whose split of the runs explains most of their spread first: a knob that rode along on
        # a few fast runs can show as large a ratio of medians as the one that made them fast, not as clean
        # a split
        found = max((e for e in effects if e["effect"] is not None), key=lambda e: e["explained"], default=None)
        if found is None:
            out += [{**e, "knob": n, "value": best[n], "baseline": base.get(n), "among": dict(fixed)}
                    for n, e in zip(left, effects)]
            break
        name = left[effects.index(found)]
        out.append({**found, "knob": name, "value": best[name], "baseline": base.get(name), "among": dict(fixed)})
        left.remove(name)
        if found["mattered"]:
            fixed[name] = best[name]
    return out


def _effect(pool: list, name: str, value, measure: str, rule: dict) -> dict:
    with_ = [r[measure] for r in pool if r["config"].get(name) == value and r["role"] != "baseline"]
    without = [r[measure] for r in pool if r["config"].get(name) != value]
    if not with_ or not without:
        return {"runs_with": len(with_), "runs_without": len(without), "median_with": None,
                "median_without": None, "effect": None, "mattered": False, "explained": 0.0}
    a, b = statistics.median(without), statistics.median(with_)
    effect = a / b if b > 0 else None
    mattered = effect is not None and (effect > rule["noise_ratio"] or effect < 1 / rule["noise_ratio"]) \
        and abs(a - b) > rule["noise_seconds"]
    return {"runs_with": len(with_), "runs_without": len(without), "median_with": b, "median_without": a,
            "effect": effect, "mattered": bool(mattered), "explained": _explained(with_, without)}


def _explained(*groups) -> float:
    """Share of the spread of log(objective) the split into `groups` explains (1 − within / total)."""
    logs = [[math.log(max(v, 1e-9)) for v in g] for g in groups]
    every = [v for g in logs for v in g]
    mean = sum(every) / len(every)
    total = sum((v - mean) ** 2 for v in every)
    within = sum(sum((v - sum(g) / len(g)) ** 2 for v in g) for g in logs)
    return 1.0 - within / total if total > 0 else 0.0


def trials_table(records: list, space) -> pl.DataFrame:
    names = space.names if space else []
    rows = []
    for r in records:
        row = {c: r.get(c) for c in TRIAL_COLUMNS}
        for n in names:
            v = r["config"].get(n)
            row[n] = None if v is None else spaces.value_text(v)
        rows.append(row)
    schema = {"trial": pl.Int64, "role": pl.Utf8, "chosen_by": pl.Utf8, "status": pl.Utf8, "reason": pl.Utf8,
              "objective": pl.Float64, "io_time": pl.Float64, "wall": pl.Float64, "run_time": pl.Float64,
              "predicted": pl.Float64, "expected_saving": pl.Float64, "log": pl.Utf8, **{n: pl.Utf8 for n in names}}
    return pl.DataFrame(rows, schema=schema)


def write_files(state, records: list, result: dict) -> dict:
    folder = Path(state.folder)
    files = {"trials": str(folder / "trials.parquet")}
    with whole_file(folder / "trials.parquet") as tmp:
        trials_table(records, state.space).write_parquet(tmp)
    if state.fit is not None:
        write_text(folder / "model.json", json.dumps(state.fit.to_dict(), indent=2) + "\n")
        files["model"] = str(folder / "model.json")
    best = result.get("best")
    if best:
        files.update(write_best(folder, best))
    if state.events.page is not None:
        state.events.page(result, records, folder / "tune.html")
        files["page"] = str(folder / "tune.html")
    return files


def write_best(folder: Path, best: dict) -> dict:
    """best.hints (ROMIO hints file), best.env (variables to export), best.sh (the command line), best.toml."""
    out = {}
    hints = folder / "best.hints"
    write_text(hints, "".join(f"{k} {v}\n" for k, v in best["hints"].items()))
    out["hints"] = str(hints)
    env = folder / "best.env"
    write_text(env, "".join(f"export {k}={shlex.quote(v)}\n" for k, v in best["env"].items()))
    out["env"] = str(env)
    sh = folder / "best.sh"
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in best["env"].items())
    hint_part = f"ROMIO_HINTS={shlex.quote(str(hints.resolve()))} " if best["hints"] else ""
    write_text(sh, "#!/bin/sh\n# the best configuration iolens tune found\n"
               f"{hint_part}{prefix + ' ' if prefix else ''}{shlex.join(best['command'])}\n", mode=0o777)
    out["command"] = str(sh)
    toml = spaces.write_knob_file(best["config"], folder / "best.toml")
    out["knobs"] = str(toml)
    return out
