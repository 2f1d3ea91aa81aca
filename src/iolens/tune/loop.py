"""The tuning loop: run the baseline, then run → measure → refit → run the best predicted, then confirm.

Every run goes through `collect.run.run`, exactly as `iolens run` (same Darshan discovery, same
`.run.json`); its objective is the slowest rank's I/O time of its own log, the measure `compare` judges by
(`analysis.runs.run_metrics`), with the wall time beside it. The verdict is compare's (`noise_rule`,
`verdict`) on the baseline's repeats against the best configuration's repeats.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..analysis.compare import NOISE_RATIO, NOISE_SECONDS, noise_rule
from ..analysis.diagnosis import diagnose
from ..analysis.runs import key_measures, run_metrics
from ..collect.run import find_darshan, program_name
from ..model import read
from ..optional import require
from ..output import write_text
from . import model as fitting
from . import space as spaces
from . import study as studies
from .result import finish, knob_effects
from .trial import run_trial, salvage

SETTINGS = "tune.json"  # the command and options the study was started with
SPACE_FILE = "space.json"  # the space, as planned when the study started (kept for a resume)
OBJECTIVES = ("io", "wall")


class TuneError(Exception):
    """One line saying why tune could not do its job."""


@dataclass
class Options:
    repeats: int = 2
    budget: int = 20
    max_time: float | None = None
    trial_timeout: float | None = None
    space: str | None = None  # --space FILE
    objective: str = "io"
    output: str | None = None
    darshan: str | None = None
    seed: int = 0


@dataclass
class Events:
    """What the loop tells its caller: messages, a run started / finished (for a progress bar), and the
    study's end: `page(result, records, path)` writes the study page (`tune.study` gives the HTML page's
    writer; None: no page)."""
    say: object = None
    started: object = None
    finished: object = None
    page: object = None

    def message(self, text: str) -> None:
        if self.say:
            self.say(text)


@dataclass
class Trial:
    role: str  # baseline | search | confirm
    config: dict
    chosen_by: str  # baseline | sampler | model | best
    predicted: float | None = None
    expected_saving: float | None = None
    extra: dict = field(default_factory=dict)


def default_folder(command: list) -> Path:
    return Path(f"tune-{program_name(command)}-{time.strftime('%Y%m%d')}")


def tune(command: list, options: Options | None = None, events: Events | None = None) -> dict:
    """Tune `command`; returns the result (the `iolens tune --json` structure)."""
    options, events = options or Options(), events or Events()
    if not command:
        raise TuneError("no command given (iolens tune [OPTIONS] -- COMMAND ...)")
    if options.objective not in OBJECTIVES:
        raise TuneError(f"--objective must be one of {', '.join(OBJECTIVES)}")
    if options.budget < 2 * options.repeats + 1:
        raise TuneError(f"--budget {options.budget} leaves no search run: it must be at least "
                        f"{2 * options.repeats + 1} (baseline and confirmation: {options.repeats} runs each)")
    folder = Path(options.output) if options.output else default_folder(command)
    user_space = spaces.load_space(options.space, command) if options.space else None
    if user_space is None and spaces.placeholders(command):
        raise TuneError("the command has placeholders (" + ", ".join(sorted(spaces.placeholders(command))) +
                        "): give their values with --space FILE ([arg] NAME = [...])")
    if user_space is not None and not user_space.knobs:
        raise TuneError(_nothing_runtime(user_space))  # said before anything runs
    find_darshan(options.darshan)  # RunError: no runtime, said before a study folder is made
    folder.mkdir(parents=True, exist_ok=True)
    _check_settings(folder, command, options)
    claim = studies.claim(folder)
    if claim is None:
        raise TuneError(f"{folder}: another iolens tune is running on this study")
    with claim:  # held until the study ends (the system releases it if this process is killed)
        if user_space is not None:
            write_text(folder / SPACE_FILE, json.dumps(user_space.to_dict(), indent=2) + "\n")
        return _study(folder, command, options, events, user_space)


def _study(folder: Path, command: list, options: Options, events: Events, user_space) -> dict:
    study, storage = studies.open_study(folder, options.seed)
    if studies.recover(study, storage, lambda number, attrs: _salvage(folder, number, attrs, options)):
        events.message("resuming: the run a stop interrupted will be run again")
    state = _State(folder, command, options, events, study, time.monotonic())
    state.space = user_space or _saved_space(folder)
    state.run_baseline()
    if state.space is None:
        state.plan_default_space()
    if not state.space.knobs:
        return finish(state, nothing=_nothing_runtime(state.space) + (
            "; the baseline's I/O brings none of the default knobs (no MPI-IO, no Lustre file): give yours "
            "with --space FILE" if state.space.source == "default" else ""))
    state.search()
    state.confirm()
    return finish(state)


class _State:
    def __init__(self, folder, command, options, events, study, t0):
        self.folder, self.command, self.options, self.events = folder, command, options, events
        self.study, self.t0 = study, t0
        self.space = None
        self.basis = None
        self.fit = None
        self.baseline_insights = None
        self._baseline_log = None

    # --- bookkeeping -------------------------------------------------------------------------------
    def records(self, role=None) -> list:
        return [r for r in studies.records(self.study) if role is None or r["role"] == role]

    def runs_left(self) -> int:
        return self.options.budget - len(self.records())

    def out_of_time(self) -> bool:
        return self.options.max_time is not None and time.monotonic() - self.t0 > self.options.max_time

    # --- baseline ----------------------------------------------------------------------------------
    def run_baseline(self) -> None:
        done = self.records("baseline")
        for _ in range(self.options.repeats - len(done)):
            config = self.space.baseline() if self.space is not None else {}
            self.run(Trial("baseline", config, "baseline"))
        ok = [r for r in self.records("baseline") if r["status"] == "ok"]
        if not ok:
            reasons = "; ".join(sorted({r["reason"] for r in self.records("baseline")}))
            raise TuneError(f"the baseline did not run: {reasons} (trials in {self.folder / 'trials'})")

    def baseline_log(self):
        """The first successful baseline run's log (read once)."""
        if self._baseline_log is None:
            ok = [r for r in self.records("baseline") if r["status"] == "ok"]
            self._baseline_log = read(ok[0]["log"])
        return self._baseline_log

    def plan_default_space(self) -> None:
        log = self.baseline_log()
        self.baseline_insights = diagnose(log)
        self.space = spaces.default_space(log, self.baseline_insights, key_measures(log))
        # the values the recommendations name join their knobs' values, so that they can be tried first
        spaces.add_recommended(self.space, recommended_settings(self.baseline_insights))
        write_text(self.folder / SPACE_FILE, json.dumps(self.space.to_dict(), indent=2) + "\n")

    # --- search ------------------------------------------------------------------------------------
    def search(self) -> None:
        reserve = self.options.repeats - len(self.records("confirm"))  # runs the confirmation still needs
        self.basis = fitting.Basis.of(self.space, *_log_scale(run_metrics(self.baseline_log())))
        if self.records("confirm"):
            self.refit()
            return  # the search ended before a stop: go on confirming
        self.grid, self.features = self.space.grid(), None
        self.expected = self._expected_savings()
        self.first, self.avoid = self._recommended_first()
        while self.runs_left() > reserve and not self.out_of_time():
            trial = self.propose()
            if trial is None:
                self.events.message("every configuration of the space has been run")
                break
            self.run(trial)
        self.refit()

    def tried(self) -> set:
        out = set()
        for r in self.records():
            try:
                out.add(tuple(self.space.indices(r["config"])))
            except (KeyError, ValueError):  # the baseline, with knobs not set: not a grid point
                pass
        return out

    def refit(self):
        rows = [r for r in self.records() if r["status"] == "ok" and r["role"] != "confirm"]
        idx, y = [], []
        for r in rows:
            try:
                idx.append(self.space.indices(r["config"]))
            except (KeyError, ValueError):
                continue
            y.append(r["objective"])
        self.fit = fitting.fit(self.basis, idx, y) if len(y) >= fitting.min_trials(self.space) else None
        return self.fit

    def propose(self) -> Trial | None:
        tried = self.tried()
        if len(tried) >= self.space.size:
            return None
        ran = [r["config"] for r in self.records()]
        while self.first:  # the recommendations expected to save most, first (the other knobs as the baseline has them)
            config, saving = self.first.pop(0)
            if config not in ran:
                return Trial("search", config, "recommendation", None, saving)
        fitted = self.refit()
        if fitted is not None:
            best = min(r["objective"] for r in self.records() if r["status"] == "ok")
            dims = [len(k.values) for k in self.space.knobs]
            if self.features is None:
                self.features = self.basis.matrix(self.grid)  # the grid's basis: built once per search
            idx, predicted, how = fitting.choose(fitted, self.basis, self.grid, dims, tried, best, self.features)
            if idx is not None:
                config = self.space.config(idx)
                return Trial("search", config, how, predicted, self.expected_for(config))
        return self.sampled(tried)

    def sampled(self, tried: set) -> Trial | None:
        """The library's sampler's next configuration (one it has not proposed before)."""
        for attempt in range(50):
            t = self.study.ask(studies.distributions(self.space))
            config = {name: t.params.get(name) for name in self.space.names}
            # a value a recommendation expects to cost time is tried last (after 40 asks that keep it)
            costly = attempt < 40 and any((n, v) in self.avoid for n, v in config.items())
            # (a trial a kill left enqueued may come back here with knobs missing: skipped like a repeat)
            if None not in config.values() and not costly and tuple(self.space.indices(config)) not in tried:
                predicted = float(self.fit.predict(self.basis.matrix([self.space.indices(config)]))[0]) \
                    if self.fit else None
                return Trial("search", config, "sampler", predicted, self.expected_for(config), {"asked": t})
            t.set_user_attr("record", {"status": "skipped", "reason": studies.DUPLICATE})
            self.study.tell(t, state=_pruned())
        left = np.flatnonzero(fitting.untried_mask(self.grid, [len(k.values) for k in self.space.knobs], tried))
        if not len(left):
            return None
        config = self.space.config(self.grid[left[0]])
        return Trial("search", config, "grid (the sampler kept repeating itself)", None, self.expected_for(config))

    # --- expected savings (issue 17 item 2: diagnose's recommendations may carry `expected_saving`) ----
    def _expected_savings(self) -> dict:
        """knob key -> the largest saving (s) a recommendation naming it expects; {} where none says."""
        if self.baseline_insights is None:
            self.baseline_insights = diagnose(self.baseline_log())
        out = {}
        for insight in self.baseline_insights:
            for rec in insight.recommendations:
                saving = getattr(rec, "expected_saving", None)
                if saving is None:
                    saving = rec.to_dict().get("expected_saving")
                if saving is None:
                    continue
                text = f"{rec.title} {rec.detail} {rec.snippet}"
                for knob in self.space.knobs:
                    if knob.key in text:
                        out[knob.name] = max(out.get(knob.name, 0.0), float(saving))
        return out

    def _recommended_first(self) -> tuple:
        if self.baseline_insights is None:
            self.baseline_insights = diagnose(self.baseline_log())
        return first_proposals(self.space, self.baseline_insights)

    def expected_for(self, config: dict):
        base = self.space.baseline()
        savings = [self.expected[n] for n, v in config.items() if v != base.get(n) and n in self.expected]
        return max(savings) if savings else None

    # --- confirmation ------------------------------------------------------------------------------
    def best_search(self) -> dict | None:
        ok = [r for r in self.records() if r["status"] == "ok" and r["role"] == "search"]
        return min(ok, key=lambda r: r["objective"]) if ok else None

    def confirm(self) -> None:
        done = self.records("confirm")
        if done:
            config, how = done[0]["config"], done[0]["chosen_by"]
        else:
            best = self.best_search()
            if best is None:
                self.events.message("no search run finished: nothing to confirm")
                return
            config, how = self.only_what_mattered(best["config"])
        for _ in range(self.options.repeats - len(done)):
            self.run(Trial("confirm", config, how))

    def only_what_mattered(self, best: dict) -> tuple:
        """The best configuration with the knobs whose measured effect is within the noise put back as the
        baseline has them: what is confirmed (and written to best.hints) is what made the difference."""
        measure = "io_time" if self.options.objective == "io" else "wall"
        base = [r[measure] for r in self.records("baseline") if r["status"] == "ok"]
        effects = knob_effects(self.records(), self.space, best, measure,
                               noise_rule(base, NOISE_RATIO, NOISE_SECONDS, measure))
        # kept: what mattered, and what could not be measured apart from it (unknown is not "no effect")
        kept = {e["knob"] for e in effects if e["mattered"] or e["effect"] is None}
        if not any(e["mattered"] for e in effects):
            return best, "best"
        baseline = self.space.baseline()
        pruned = {k: (v if k in kept else baseline.get(k)) for k, v in best.items()}
        return pruned, "best" if pruned == best else "best, knobs that mattered only"

    # --- one run -----------------------------------------------------------------------------------
    def run(self, trial: Trial) -> dict:
        asked = trial.extra.pop("asked", None)
        if asked is None:
            dists = studies.distributions(self.space) if self.space and trial.role != "baseline" else {}
            dists = {k: d for k, d in dists.items() if trial.config.get(k) is not None}  # None: as in the baseline
            if dists:
                self.study.enqueue_trial({k: trial.config[k] for k in dists}, skip_if_exists=False)
            asked = self.study.ask(dists)
        asked.set_user_attr("plan", {"role": trial.role, "config": json.dumps(trial.config)})
        if self.events.started:
            self.events.started(trial)
        record = run_trial(self, asked.number, trial)
        asked.set_user_attr("record", record)  # one write: the journal syncs every write to disk
        if record["status"] == "ok":
            self.study.tell(asked, record["objective"])
        else:
            self.study.tell(asked, state=_failed())
        if self.events.finished:
            self.events.finished(trial, record)
        return record


def _salvage(folder, number: int, attrs: dict, options):
    role = attrs.get("plan", {}).get("role")
    if role is None:
        return None
    record = salvage(folder, number, role, options)
    return None if record is None else {**record, "role": role}


def first_proposals(space, insights) -> tuple:
    """([(configuration, expected saving)] of the recommendations expected to save time, most first, each the
    baseline with the recommendation's knobs set; {(knob, value)} of those expected to cost time and of no
    saving one, which the sampler tries last). Only knobs and values of `space`."""
    base = space.baseline()
    dims = {k.name: k for k in space.knobs}
    best: dict = {}
    costly = set()
    for settings, saving in recommended_settings(insights):
        config, ok = dict(base), True
        for name, text in settings.items():
            value = _value_of(dims.get(name), text)
            if value is None:
                ok = False
                break
            config[name] = value
        if not ok or config == base:
            continue
        key = tuple(sorted((n, spaces.value_text(v)) for n, v in config.items() if v is not None))
        if saving > 0:
            if key not in best or saving > best[key][1]:
                best[key] = (config, saving)
        else:
            costly.update((n, v) for n, v in config.items() if v != base.get(n))
    first = sorted(best.values(), key=lambda cs: -cs[1])
    keep = {(n, v) for config, _ in first for n, v in config.items()}
    return first, costly - keep


def recommended_settings(insights) -> list:
    """[({knob: value text}, expected saving)] of every recommendation that sets knobs (its `knobs`, and the
    `--set` settings of its `try_now`) and expects a saving (negative: a cost)."""
    out = []
    for insight in insights:
        for rec in insight.recommendations:
            saving = getattr(rec, "expected_saving", None)
            if saving is None:
                continue
            settings = {k["name"]: str(k["value"]) for k in rec.knobs}
            words = rec.try_now.split()
            settings.update(w.split("=", 1) for prev, w in zip(words, words[1:]) if prev == "--set" and "=" in w)
            if settings:
                out.append((settings, float(saving)))
    return out


def _value_of(dimension, text: str):
    """The value of `dimension` whose text is `text` (None: not one of its values, or no such knob)."""
    if dimension is None:
        return None
    return next((v for v in dimension.values if spaces.value_text(v) == text), None)


def _log_scale(metrics: dict) -> tuple:
    """(bytes moved, mean request size) of the baseline at the file system, for the model's basis."""
    moved = metrics["bytes_read"] + metrics["bytes_written"]
    requests = metrics["reads"] + metrics["writes"]
    return float(moved), float(moved / requests) if requests else 0.0


def _pruned():
    return require("optuna").trial.TrialState.PRUNED


def _failed():
    return require("optuna").trial.TrialState.FAIL


def _nothing_runtime(space) -> str:
    text = "nothing in the space can be changed at run time"
    if space.code_changes:
        text += "; code changes to try: " + ", ".join(k.name for k in space.code_changes)
    return text


def _saved_space(folder: Path):
    path = folder / SPACE_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    space = spaces.Space(source=data["source"])
    space.knobs = [spaces.Dimension.from_dict(k) for k in data["knobs"]]
    space.code_changes = [spaces.Dimension.from_dict(k) for k in data["code_changes"]]
    return space


def _check_settings(folder: Path, command: list, options: Options) -> None:
    """A study folder belongs to one command: resuming it with another is refused, not mixed."""
    path = folder / SETTINGS
    settings = {"command": list(command), "objective": options.objective, "repeats": options.repeats,
                "space": str(Path(options.space).resolve()) if options.space else None}
    if path.is_file():
        old = json.loads(path.read_text())
        for key, value in settings.items():
            if old.get(key) != value:
                raise TuneError(f"{folder} holds a study of another {key} ({old.get(key)!r}); give another -o DIR "
                                "or the same command and options to resume it")
        return
    write_text(path, json.dumps(settings, indent=2) + "\n")
