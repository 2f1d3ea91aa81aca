"""The study: Optuna holds every trial in a journal file in the study folder, so a killed tune resumes.

Each trial is an Optuna trial with the knobs as categorical parameters (values are a grid, so every
configuration is a point the model can predict) and two user attributes: `plan` (role: baseline, search,
confirm; the configuration) when it starts, `record` (how it was chosen, the objective, wall time,
predicted and expected seconds, status, reason, log path) when it ends — one write each, as the journal
syncs every write to disk. Nothing is kept only in memory: a kill loses at most the run under way, which
the next start finishes from its trial folder if the run had ended, or marks "interrupted" and runs again.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from ..optional import require

JOURNAL = "study.journal"
STUDY_NAME = "iolens-tune"
INTERRUPTED = "interrupted: tune was stopped while it ran"
DUPLICATE = "duplicate: this configuration was already run"


def claim(folder: Path):
    """Hold the study folder for this process (released by the system when it ends, even killed): a second
    tune on the same folder is refused, and a journal lock a killed tune left behind is cleared."""
    import fcntl

    handle = open(Path(folder) / ".tune.lock", "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    stale = Path(folder) / (JOURNAL + ".lock")  # optuna's lock file: only a killed writer leaves it
    if stale.exists() or stale.is_symlink():
        stale.unlink()
    return handle


def open_study(folder: Path, seed: int = 0):
    """(study, storage) of `folder`: created, or loaded as it was left."""
    optuna = require("optuna")

    optuna.logging.set_verbosity(logging.WARNING)
    journal = getattr(optuna.storages, "journal", None)
    Backend = journal.JournalFileBackend if journal is not None else optuna.storages.JournalFileStorage  # optuna < 4
    storage = optuna.storages.JournalStorage(Backend(str(Path(folder) / JOURNAL)))
    study = optuna.create_study(study_name=STUDY_NAME, storage=storage, direction="minimize",
                                sampler=optuna.samplers.RandomSampler(seed=seed), load_if_exists=True)
    return study, storage


def distributions(space) -> dict:
    CategoricalDistribution = require("optuna.distributions").CategoricalDistribution

    return {k.name: CategoricalDistribution(list(k.values)) for k in space.knobs}


def recover(study, storage, salvage) -> int:
    """Trials a kill left running. One whose run had ended (its exit was recorded in the trial folder) is
    finished from what it left: `salvage(number, user_attrs)` returns its record. The others are marked
    failed and "interrupted": not a run, they neither count against the budget nor appear among the
    trials, and the loop runs what is still missing. Returns how many were interrupted."""
    TrialState = require("optuna.trial").TrialState

    study_id = storage.get_study_id_from_name(STUDY_NAME)
    lost = 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, t.number)
        record = salvage(t.number, t.user_attrs)
        if record is None:
            lost += 1
            record = {"status": "interrupted", "reason": INTERRUPTED}
        storage.set_trial_user_attr(trial_id, "record", record)
        if record["status"] == "ok":
            storage.set_trial_state_values(trial_id, TrialState.COMPLETE, [record["objective"]])
        else:
            storage.set_trial_state_values(trial_id, TrialState.FAIL)
    return lost


def records(study) -> list:
    """Every trial that ran to its end (measured, or failed with a reason), in run order, as dicts."""
    out = []
    for t in study.get_trials(deepcopy=False):
        record, plan = t.user_attrs.get("record", {}), t.user_attrs.get("plan", {})
        if record.get("status") not in ("ok", "failed"):
            continue
        out.append({**record, "role": plan["role"], "trial": t.number, "config": json.loads(plan["config"])})
    out.sort(key=lambda r: r["trial"])
    return out
