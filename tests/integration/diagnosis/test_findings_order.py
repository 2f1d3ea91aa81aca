"""The order the findings run in does not change the diagnosis: insights are sorted (severity, score, code),
and what findings say of each other (supersedes, annotations) does not depend on who ran first."""
from __future__ import annotations

import random
import warnings

import pytest

import iolens
from iolens.analysis.diagnosis import diagnose, engine

from support.corpus import LOGS

LOGS_TO_TRY = ("generated/fill_rank0.darshan", "generated/collective_2phase.darshan",
               "generated2/one_heavy_rank.darshan", "generated2/random_small_reads.darshan",
               "generated2/sieved_noncontig_reads.darshan", "pairs/small_indep.darshan")
SENSITIVE = {"imbalance_ratio": 1.1, "imbalance_min_bytes": 1, "serialized_min_share": 0.2, "redundant_ratio": 1.01,
             "redundant_min_bytes": 1, "sieving_min_bytes": 1, "sieving_min_share": 0.01, "min_stake_floor": 0.0,
             "min_runtime_share": 0.0, "lustre_large_file_bytes": 1, "ost_min_bytes": 1, "ost_imbalance_ratio": 1.1}


@pytest.mark.parametrize("name", LOGS_TO_TRY)
@pytest.mark.parametrize("thresholds", [None, SENSITIVE], ids=["default", "sensitive"])
def test_any_run_order_gives_the_same_insights(logs_dir, monkeypatch, name, thresholds):
    log = iolens.read(str(LOGS / name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = [i.to_dict() for i in diagnose(log, thresholds)]
        for seed in (0, 1):
            order = list(engine.FINDINGS.items())
            random.Random(seed).shuffle(order)
            monkeypatch.setattr(engine, "FINDINGS", dict(order[::-1] if seed else order))
            assert [i.to_dict() for i in diagnose(log, thresholds)] == want, seed
