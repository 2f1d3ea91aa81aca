"""Counter-based checks as rules over the fleet's features table: the fleet's insight columns equal per-log
`diagnose` on every shared log, and `fleet report -t` gives the columns a rebuild with the same threshold gives,
without reading a log."""
from __future__ import annotations

import json
import warnings

import pytest

import iolens
from iolens import fleet_report
from iolens.analysis.diagnosis import Thresholds, diagnose
from iolens.analysis.diagnosis import RULES
from iolens.fleet.recompute import with_thresholds

from support.corpus import all_logs
from support.cli import run_iolens, run_main
from support.fleet_stores import Stores, jobs_of, t_args

# name -> the -t of a build (and of the report recomputing the default store)
SETTINGS = {
    "default": {},
    "share": {"small_min_share": "30%"},  # a share threshold
    "count": {"no_collective_min_ops": "10"},  # a count threshold
    "shared": {"serialized_min_share": "99%"},  # SERIALIZED_IO's, a per-log check; RANK_IMBALANCE's dedupe reads it
    "edge": {"small_request_bytes": "1MiB"},  # a size-bin edge
    "off_edge": {"small_request_bytes": "64KiB"},  # between edges: counters round it down to 10 KiB
}
COLUMNS = [f"insight_{c}" for c in RULES] + ["headline", "headline_severity", "insights"]


CLI_BUILDS = ("default", "share")  # through the command (a local Dask cluster); the others in-process (faster)
STORES = Stores(SETTINGS, cli=CLI_BUILDS)  # every shared log built once per setting (the `stores` fixture)


# the default store in the default run; each rebuild at other thresholds with the tests marked slow
@pytest.mark.parametrize("name", ["default", *(pytest.param(n, marks=pytest.mark.slow) for n in ("share", "count", "off_edge"))])
def test_fleet_insights_are_the_per_log_diagnosis(stores, name):
    """Every shared log, every rule code: the column is the severity `diagnose` gives (null when absent), and
    the headline is diagnose's first critical/warning insight, its title included."""
    th = Thresholds(SETTINGS[name])
    jobs = jobs_of(stores[name])
    assert set(jobs["path"]) == {str(p) for p in all_logs()}
    seen = set()
    for row in jobs.iter_rows(named=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            found = diagnose(iolens.read(row["path"]), th)
        for code in RULES:
            want = next((i.severity for i in found if i.code == code), None)
            assert row[f"insight_{code}"] == want, (code, row["path"])
            seen.add(want)
        serious = [i for i in found if i.severity in ("critical", "warning")]
        top = serious[0] if serious else None
        assert (row["headline"], row["headline_title"]) == ((top.code, top.title) if top else (None, None)), row["path"]
        assert row["insights"] == len(serious)
    assert {"critical", "warning", None} <= seen  # the comparison covers found and not found


@pytest.mark.parametrize("name", ["share", "off_edge", *(pytest.param(n, marks=pytest.mark.slow) for n in ("count", "shared", "edge"))])
def test_report_thresholds_give_the_rebuilds_columns(stores, name):
    """`fleet report -t X=V` over the default store == `fleet build -t X=V`, for every job whose stored
    features answer it; the rest (a trace read at another small_request_bytes) are counted, kept as built. A
    threshold the per-log checks read too recomputes the rule codes only, and says so."""
    th = Thresholds(SETTINGS[name])
    built = jobs_of(stores["default"])
    recomputed, note = with_thresholds(built, th)
    rebuilt = jobs_of(stores[name])
    assert recomputed["path"].to_list() == rebuilt["path"].to_list()
    stale = note["stale"].get("SMALL_IO", 0)
    assert (stale > 0) == (name == "off_edge" or name == "edge")
    # a threshold the per-log checks read too: the rule codes are recomputed, the per-log ones (and so the
    # headline they may decide) are as built, and the note says so
    columns = COLUMNS if name != "shared" else [f"insight_{c}" for c in RULES]
    assert note["per_log_thresholds"] == (["serialized_min_share"] if name == "shared" else [])
    differ = recomputed.select(columns).to_dicts() != rebuilt.select(columns).to_dicts()
    rows = [(a, b) for a, b in zip(recomputed.select(columns).iter_rows(named=True),
                                   rebuilt.select(columns).iter_rows(named=True)) if a != b]
    assert len(rows) <= stale and (differ == bool(rows))
    moved = [c for c in columns if c.startswith("insight_")
             if (recomputed[c].fill_null("") != built[c].fill_null("")).any()]
    assert moved  # the threshold moved some job
    assert "insight_SMALL_IO" in note["recomputed"] and "insight_CONFLICT" in note["per_log"]


def test_report_json_and_page_say_what_was_recomputed(stores, tmp_path):
    page = tmp_path / "fleet.html"
    r = run_main("fleet", "report", stores["default"], "-o", page, "--json", *t_args(SETTINGS["share"]))
    out = json.loads(r.stdout)
    assert out["rules"]["thresholds"] == {"small_min_share": 0.3}
    rebuilt = {i["code"]: i for i in fleet_report(stores["share"], tmp_path / "b.html")["insights"]}
    small = next(i for i in out["insights"] if i["code"] == "SMALL_IO")
    assert {k: small[k] for k in ("critical", "warning", "info")} == \
        {k: rebuilt["SMALL_IO"][k] for k in ("critical", "warning", "info")}
    html = page.read_text()
    assert 'id="rules-note"' in html and "small_min_share=0.3" in html and "insight_SMALL_IO" in html
    r = run_main("fleet", "report", stores["default"], "-o", tmp_path / "d.html", *t_args(SETTINGS["shared"]))
    assert "The per-log checks read serialized_min_share too" in r.stderr
    r = run_main("fleet", "report", stores["default"], "-o", tmp_path / "c.html", *t_args(SETTINGS["off_edge"]))
    assert "kept as built" in r.stderr and "rebuild with -t" in r.stderr


@pytest.mark.parametrize("args, problem", [
    (["-t", "no_such=1"], "unknown threshold 'no_such'"),
    (["-t", "small_min_share=3"], "a share is between 0 and 1"),
    (["-t", "small_request_bytes=lots"], "cannot read"),
    (["-t", "small_request_bytes=8589934592GiB"], "past the last size-bin edge"),
])
def test_bad_threshold_is_one_line(stores, tmp_path, args, problem):
    for cmd in (["report", stores["default"], "-o", tmp_path / "x.html"], ["build", tmp_path, "-o", tmp_path / "s"]):
        if cmd[0] == "build" and "edge" in problem:
            continue  # a build reads logs at any limit; only the stored features stop at 1 GiB
        r = run_main("fleet", *cmd, *args, check=False)
        assert r.returncode == 2 and problem in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("iolens: error: ")


def test_config_file_is_read_like_diagnose(stores, tmp_path):
    cfg = tmp_path / "t.toml"
    cfg.write_text('[thresholds]\nno_collective_min_ops = 10\n')
    a = json.loads(run_main("fleet", "report", stores["default"], "-o", tmp_path / "a.html", "--json",
                              "--config", cfg).stdout)
    b = fleet_report(stores["default"], tmp_path / "b.html", SETTINGS["count"])  # what -t gives
    assert a["insights"] == b["insights"] and a["rules"] == json.loads(json.dumps(b["rules"]))
    cfg.write_text('[thresholds]\nsmall_min_opz = 50\n')
    r = run_main("fleet", "report", stores["default"], "-o", tmp_path / "c.html", "--config", cfg, check=False)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "small_min_opz" in r.stderr


@pytest.mark.smoke
def test_store_without_features_says_rebuild(tmp_path, generated):
    store = tmp_path / "plain"
    run_iolens("fleet", "build", generated / "fill_rank0.darshan", "-o", store, "-q", "--no-diagnose")
    r = run_iolens("fleet", "report", store, "-o", tmp_path / "p.html", "-t", "small_min_ops=10", check=False)
    assert r.returncode == 2 and "rebuild" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    run_iolens("fleet", "report", store, "-o", tmp_path / "p.html")  # without -t the page is as built


def test_a_code_the_store_has_no_features_for_stays_as_built(stores):
    """A store built before a code became a rule: that code's column is kept, and the note says so."""
    built = jobs_of(stores["default"])
    older = built.drop([c for c in built.columns if c.startswith("small_io_")])
    recomputed, note = with_thresholds(older, Thresholds({"small_min_ops": 1}))
    assert note["not_in_store"] == ["SMALL_IO"] and "insight_SMALL_IO" in note["per_log"]
    assert recomputed["insight_SMALL_IO"].to_list() == built["insight_SMALL_IO"].to_list()
