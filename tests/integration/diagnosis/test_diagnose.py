"""`iolens diagnose`: the right insights on logs whose I/O pattern is known, and silence on healthy ones."""
from __future__ import annotations

from functools import lru_cache

import pytest

import iolens
from iolens.analysis.diagnosis import JSON_SCHEMA, SCHEMA_VERSION, SEVERITIES, Thresholds, diagnose
from iolens.analysis.diagnosis.insight import CODES, LANGUAGES, SOURCES

from support.corpus import LOGS, REPO, all_logs, log_id

GEN = LOGS / "generated"
PUB = LOGS / "public" / "darshan-logs"
PYD = LOGS / "public" / "pydarshan-examples"


@lru_cache(maxsize=None)
def _read(path: str):
    return iolens.read(path)


@lru_cache(maxsize=None)
def run(path) -> tuple:
    """Insights as dicts (the public shape), computed once per log."""
    return tuple(i.to_dict() for i in diagnose(_read(str(path)), strict=True))


def codes(insights, severities=SEVERITIES) -> set:
    return {i["code"] for i in insights if i["severity"] in severities}


def one(insights, code) -> dict:
    found = [i for i in insights if i["code"] == code]
    assert found, f"{code} not raised; got {[(i['code'], i['severity']) for i in insights]}"
    return found[0]


def problems(insights) -> list:
    return [(i["code"], i["title"]) for i in insights if i["severity"] in ("critical", "warning")]


pytestmark = pytest.mark.usefixtures("logs_dir")  # every test here reads the real logs


# --- generated logs: I/O patterns known by construction ---------------------------------------------
def test_fill_rank0_is_serialized_by_rank_0():
    ins = run(GEN / "fill_rank0.darshan")
    s = one(ins, "SERIALIZED_IO")
    assert s["severity"] in ("critical", "warning")
    assert s["evidence"]["ranks"] == [0]
    m = s["evidence"]["metrics"]
    assert 0.9 <= m["serial_share"] <= 1.0  # README: rank 0 alone for about 98% of the I/O window
    assert m["ranks_starting_after"] == 7
    t0, t1 = s["evidence"]["time_window"]
    job = _read(str(GEN / "fill_rank0.darshan")).job
    assert 0 <= t0 < t1 <= job["run_time"]
    snippets = " ".join(r["snippet"] for r in s["recommendations"])
    # a POSIX, MPI-IO and STDIO log: neither HDF5's nor netCDF's fill mode is advised (issue 31, item 3)
    assert "NC_NOFILL" not in snippets and "H5D_FILL_TIME_NEVER" not in snippets
    assert "MPI_File_write_at_all" in snippets
    # the file is written twice
    r = one(ins, "REDUNDANT_WRITES")
    assert r["severity"] == "warning"
    assert 1.9 <= r["evidence"]["metrics"]["ratio"] <= 2.1
    assert r["evidence"]["metrics"]["extent_bytes"] == 256 << 20
    # rank 0 doing most bytes is the serialization itself, not a second problem; the 1 MiB writes are fine
    assert "RANK_IMBALANCE" not in codes(ins)
    assert not codes(ins) & {"SMALL_IO", "MISALIGNED_IO", "NO_COLLECTIVE_IO"}


def test_small_indep_shared_is_small_io_without_collective_io():
    ins = run(GEN / "small_indep_shared.darshan")
    s = one(ins, "SMALL_IO")
    assert s["severity"] in ("critical", "warning")
    m = s["evidence"]["metrics"]
    assert m["small_writes"] == 80_000 and m["writes"] == 80_000
    assert m["smallest_write_bytes"] >= 512 and m["largest_small_write_bytes"] <= 4096
    assert sorted(s["evidence"]["ranks"]) == list(range(8))
    assert m["strided_share"] > 0.9  # interleaved across ranks: strided, not random
    n = one(ins, "NO_COLLECTIVE_IO")
    # 8 ranks on one node, a collective step measured at ~80 ms here: the exchange would cost seconds, so the
    # finding is info and its recommendations say they are likely slower here (issue 32)
    assert n["severity"] == "info" and "would cost about" in n["summary"]
    assert n["recommendations"][0]["title"].startswith("Likely slower here: ")
    assert n["recommendations"][0]["expected_saving"] == 0 and "exchange" in n["recommendations"][0]["saving_basis"]
    assert n["evidence"]["metrics"]["independent_writes"] == 80_000
    assert n["evidence"]["files"] == ["/tmp/ioscratch/small_indep_shared.dat"]
    text = " ".join(r["snippet"] for r in n["recommendations"])
    assert "MPI_File_write_at_all" in text
    assert 'MPI_Info_set(info, "romio_cb_write", "enable")' in text and "cb_nodes" in text
    assert "ROMIO_HINTS" in text
    assert not codes(ins) & {"COLLECTIVE_IO", "RANDOM_ACCESS", "RANK_IMBALANCE", "SERIALIZED_IO"}


def test_collective_2phase_is_healthy_collective_io_with_two_aggregators():
    ins = run(GEN / "collective_2phase.darshan")
    c = one(ins, "COLLECTIVE_IO")
    assert c["severity"] == "info"
    assert c["evidence"]["ranks"] == [0, 1]
    assert c["evidence"]["metrics"]["aggregators"] == 2
    assert c["evidence"]["metrics"]["mpiio_ranks"] == 8
    assert c["evidence"]["metrics"]["posix_median_request_bytes"] == 4 << 20
    # small application requests made large by collective buffering are healthy
    assert "SMALL_IO" not in codes(ins)
    assert "NO_COLLECTIVE_IO" not in codes(ins)
    assert "RANK_IMBALANCE" not in codes(ins)  # two aggregators on one node is by design
    # the one problem: 95% of the MPI-IO time is spent above the file system (issue 17, item 3)
    assert [code for code, _ in problems(ins)] == ["MPIIO_OVERHEAD"]
    assert "independent_writes" not in c["evidence"]["metrics"]
    assert c["summary"].endswith("This is the healthy way to write shared files from many ranks.")


def test_collective_io_beside_many_independent_writes_does_not_call_their_ranks_aggregators():
    """pairs2/h5meta2_noflush_collmeta: HDF5's collective metadata writes are 4 of the file's 804 MPI-IO writes;
    the 803 POSIX writes of 512 B are mostly the 800 independent ones', not two-phase I/O's."""
    c = one(run(LOGS / "pairs2" / "h5meta2_noflush_collmeta.darshan"), "COLLECTIVE_IO")
    m = c["evidence"]["metrics"]
    assert (m["collective_writes"], m["independent_writes"]) == (4, 800)
    assert "aggregators" not in m and m["posix_ranks"] == 2
    assert "4 of the 804 MPI-IO writes" in c["summary"] and "mostly the independent writes'" in c["summary"]
    assert "healthy way" not in c["summary"] and "aggregator" not in c["title"]


def test_file_per_process_is_quiet():
    ins = run(GEN / "file_per_process.darshan")
    assert problems(ins) == []
    assert not codes(ins) & {"RANK_IMBALANCE", "SMALL_IO", "MISALIGNED_IO", "STRAGGLER", "SERIALIZED_IO"}


def test_truncated_trace_is_not_read_as_no_reads():
    ins = run(GEN / "scale_1p6M_default_cap.darshan")
    t = one(ins, "TRUNCATED_TRACE")
    assert t["severity"] in ("critical", "warning")
    assert t["partial"] is True
    m = t["evidence"]["metrics"]
    assert m["traced_reads"] == 0 and m["counted_reads"] == 800_000
    assert m["counted_read_bytes"] > 0
    assert "800,000 reads" in t["summary"] and "not traced" in t["summary"]
    assert ins[0]["code"] == "TRUNCATED_TRACE"  # the caveat comes first
    # conclusions about reads come from the counters, which saw them all
    s = one(ins, "SMALL_IO")
    assert s["evidence"]["metrics"]["small_reads"] == 800_000
    assert s["partial"] is True and "truncated" in s["summary"]
    for i in ins:
        assert i["evidence"]["metrics"].get("reads", 1) != 0, f"{i['code']} claims there were no reads"
    assert "REDUNDANT_READS" not in codes(ins) or one(ins, "REDUNDANT_READS")["source"] == "counters"


@pytest.mark.slow
def test_scale_1p6m_small_io_strided_not_random():
    path = GEN / "scale_1p6M.darshan"
    log = iolens.read(path)
    log.segments  # reading is not what is timed here
    ins = [i.to_dict() for i in diagnose(log, strict=True)]  # its speed: bench/bench_diagnose.py
    s = one(ins, "SMALL_IO")
    m = s["evidence"]["metrics"]
    assert m["small_writes"] == 800_000 and m["small_reads"] == 800_000
    assert 128 <= m["smallest_write_bytes"] and m["largest_small_write_bytes"] <= 1024
    assert 128 <= m["smallest_read_bytes"] and m["largest_small_read_bytes"] <= 1024
    assert m["strided_share"] > 0.99 and m["dominant_stride_bytes"] == 16 * 1024  # 16 ranks x 1 KiB
    assert "strided" in s["summary"]
    assert "RANDOM_ACCESS" not in codes(ins)  # sequential per rank with a stride is not random
    assert "TRUNCATED_TRACE" not in codes(ins)


# --- public logs -------------------------------------------------------------------------------------
def test_imbalanced_io_names_rank_0():
    ins = run(PUB / "imbalanced_io" / "imbalanced-io.darshan")
    r = one(ins, "RANK_IMBALANCE")
    assert r["severity"] == "warning"
    assert r["evidence"]["ranks"] == [0]
    assert r["evidence"]["metrics"]["heaviest_rank_share"] > 0.99
    assert r["evidence"]["metrics"]["ranks_on_file"] == 496
    # the cause: a huge shared file on one Lustre stripe, so ROMIO uses one aggregator
    l = one(ins, "LUSTRE_STRIPING")
    assert l["evidence"]["metrics"]["stripe_count"] == 1
    setstripe = next(x["snippet"] for x in l["recommendations"] if x["language"] == "shell")
    assert setstripe.startswith("lfs setstripe -c ") and " -S " in setstripe
    count = int(setstripe.split("-c ")[1].split()[0])
    assert 4 <= count <= 64
    # the POSIX module ran out of records: say so
    assert any(i["code"] == "TRUNCATED_TRACE" and "POSIX" in i["title"] for i in ins)


def test_skew_app_single_aggregator_on_single_stripe():
    ins = run(PUB / "skew_io" / "skew-app.darshan")
    r = one(ins, "RANK_IMBALANCE")
    assert r["evidence"]["ranks"] == [0]
    assert r["evidence"]["metrics"]["ranks_on_file"] == 65536
    l = one(ins, "LUSTRE_STRIPING")
    assert l["evidence"]["metrics"]["recommended_stripe_count"] >= 8


def test_badost_blames_the_slow_ost():
    ins = run(PYD / "sample-badost.darshan")
    s = one(ins, "SLOW_OST")
    assert s["evidence"]["metrics"]["ost"] == 14
    assert s["evidence"]["metrics"]["slowdown"] > 10
    assert 1507 in s["evidence"]["ranks"]
    assert "SLOW_OST" not in codes(run(PYD / "sample-goodost.darshan"))


def test_partial_dxt_is_flagged():
    ins = run(PUB / "partial_data_dxt" / "partial_data_dxt.darshan")
    t = [i for i in ins if i["code"] == "TRUNCATED_TRACE"]
    assert {i["title"].split()[1] for i in t} >= {"DXT_POSIX", "DXT_MPIIO"}
    assert all(i["severity"] == "critical" for i in t)


QUIET = [
    GEN / "file_per_process.darshan",
    PUB / "empty_log" / "empty_log.darshan",
    PUB / "ior_pnetcdf_hdf5" / "shane_ior-PNETCDF_id438100-438100_11-9-41525-10280033558448664385_1.darshan",
    PYD / "sample-goodost.darshan",
    PYD / "sample-dxt-simple.darshan",
    *sorted((PUB / "release_logs").glob("*.darshan")),
]


@pytest.mark.parametrize("path", QUIET, ids=log_id)
def test_healthy_logs_get_no_warnings(path):
    assert problems(run(path)) == []


# --- every log: no crash, the documented shape, sorted --------------------------------------------
def _check_schema(value, schema, where="$"):
    """The subset of JSON Schema that JSON_SCHEMA uses."""
    if "oneOf" in schema:
        errors = []
        for option in schema["oneOf"]:
            try:
                _check_schema(value, option, where)
                return
            except AssertionError as exc:
                errors.append(str(exc))
        raise AssertionError(f"{where}: matches no option: {errors}")
    if "const" in schema:
        assert value == schema["const"], where
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    kind = schema.get("type")
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    if kind == "integer":
        assert isinstance(value, int) and not isinstance(value, bool), where
    elif kind == "number":
        assert isinstance(value, (int, float)) and not isinstance(value, bool), where
        assert value >= schema.get("minimum", value), f"{where}: {value} below the minimum"
    elif kind:
        assert isinstance(value, types[kind]), f"{where}: expected {kind}, got {type(value).__name__}"
    if kind == "string" and "pattern" in schema:
        import re
        assert re.search(schema["pattern"], value), f"{where}: {value!r} does not match {schema['pattern']}"
    if kind == "object":
        for key in schema.get("required", []):
            assert key in value, f"{where}: missing {key}"
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                _check_schema(value[key], sub, f"{where}.{key}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, v in value.items():
                if key not in schema.get("properties", {}):
                    _check_schema(v, extra, f"{where}.{key}")
    if kind == "array":
        n = len(value)
        assert n >= schema.get("minItems", 0) and n <= schema.get("maxItems", n), where
        for k, item in enumerate(value):
            _check_schema(item, schema.get("items", {}), f"{where}[{k}]")


@pytest.mark.parametrize("path", [p for p in all_logs() if p.stat().st_size < 4 << 20], ids=log_id)
def test_every_log_diagnoses_in_the_documented_shape(path):
    try:
        ins = run(path)
    except iolens.LogError:
        pytest.skip("not a readable log")
    _check_schema({"log": str(path), "schema_version": SCHEMA_VERSION, "insights": list(ins)}, JSON_SCHEMA)
    order = [SEVERITIES.index(i["severity"]) for i in ins]
    assert order == sorted(order), "not most severe first"
    for i in ins:
        assert i["code"] in CODES and i["source"] in SOURCES
        assert i["title"] and i["summary"].endswith((".", ")"))
        for r in i["recommendations"]:
            assert r["language"] in LANGUAGES and r["title"]
        w = i["evidence"]["time_window"]
        if w is not None:
            assert w[0] <= w[1]
        assert i["severity"] != "critical" or i["recommendations"], "a critical insight must say what to do"
        assert len(i["evidence"]["ranks"]) <= 32 and len(i["evidence"]["files"]) <= 10


# --- thresholds -------------------------------------------------------------------------------------
def test_threshold_changes_the_outcome():
    log = _read(str(GEN / "small_indep_shared.darshan"))
    assert "SMALL_IO" in {i.code for i in diagnose(log)}
    # 80,000 small writes are not "many" if many means 100,000
    assert "SMALL_IO" not in {i.code for i in diagnose(log, {"small_min_ops": 100_000})}
    # 512 B - 4 KiB writes are not small if small means at most 100 bytes
    assert "SMALL_IO" not in {i.code for i in diagnose(log, Thresholds({"small_request_bytes": "100"}))}
    # a stricter serialization threshold silences fill_rank0's 98%
    fill = _read(str(GEN / "fill_rank0.darshan"))
    assert "SERIALIZED_IO" in {i.code for i in diagnose(fill)}
    assert "SERIALIZED_IO" not in {i.code for i in diagnose(fill, {"serialized_min_share": "99.5%"})}


def test_threshold_values_and_units():
    t = Thresholds({"small_request_bytes": "64KiB", "small_min_share": "20%", "serialized_gap": "5ms"})
    assert t.small_request_bytes == 65536 and t.small_min_share == 0.2 and t.serialized_gap == 0.005
    assert t.changed().keys() == {"small_request_bytes", "small_min_share", "serialized_gap"}
    for bad in ({"nope": 1}, {"small_min_share": "150%"}, {"small_min_share": "x"}, {"small_request_bytes": "-1"},
                {"serialized_gap": "10KiB"}):
        with pytest.raises(ValueError):
            Thresholds(bad)


# --- robustness and rendering -------------------------------------------------------------------------
def test_a_failing_check_does_not_hide_the_others(monkeypatch):
    from iolens.analysis.diagnosis import engine
    from iolens.analysis.diagnosis.finding import Finding

    def broken(ctx, verdict):
        raise RuntimeError("boom")

    monkeypatch.setattr(engine, "FINDINGS", {"BROKEN": Finding("BROKEN", "", broken), **engine.FINDINGS})
    log = _read(str(GEN / "fill_rank0.darshan"))
    with pytest.warns(RuntimeWarning, match="boom"):
        ins = diagnose(log)
    got = {i.code for i in ins}
    assert "CHECK_FAILED" in got and "SERIALIZED_IO" in got
    with pytest.raises(RuntimeError):
        diagnose(log, strict=True)


@pytest.mark.parametrize("name", ["fill_rank0", "scale_1p6M_default_cap", "collective_2phase"])
def test_rich_rendering(name):
    import io

    from rich.console import Console

    from iolens.views.terminal_insights import render

    path = GEN / f"{name}.darshan"
    buf = io.StringIO()
    render(str(path), list(run(path)), job=_read(str(path)).job, show_all=True,
           console=Console(file=buf, force_terminal=True, width=100))
    text = buf.getvalue()
    for i in run(path):
        assert i["code"] in text
    if name == "fill_rank0":
        assert "CRITICAL" in text and "MPI_File_write_at_all" in text


def test_docs_show_the_schema_and_an_example_of_this_version():
    """docs/diagnosis.md's JSON Schema block is `JSON_SCHEMA`, and its example is valid under it."""
    import json
    import re

    doc = (REPO / "docs" / "diagnosis.md").read_text()
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)\n```", doc, re.S)]
    schemas = [b for b in blocks if "$schema" in b]
    examples = [b for b in blocks if "schema_version" in b and "$schema" not in b]
    assert schemas == [JSON_SCHEMA], "docs/diagnosis.md's JSON Schema block differs from JSON_SCHEMA"
    assert examples, "no example"
    for example in examples:
        _check_schema(example, JSON_SCHEMA)
        assert set(example["measures"]) == set(JSON_SCHEMA["properties"]["measures"]["required"])


def test_large_rank_counts_and_hours_read_with_thousands_separators():
    """skew_io/skew-app (65,536 ranks): titles said "65536 ranks" and "13695 h" beside "65,536 ranks" elsewhere."""
    ins = run(PUB / "skew_io" / "skew-app.darshan")
    titles = {i["code"]: i["title"] for i in ins}
    assert "65,536 ranks" in titles["LUSTRE_STRIPING"] and "65,536 ranks" in titles["RANK_IMBALANCE"]
    assert "(13,695 h of 13,695 h over all ranks)" in titles["MPIIO_OVERHEAD"]
    assert not any("65536" in i["title"] + i["summary"] for i in ins)


def test_an_insight_shown_as_info_says_the_reason_that_made_it_info():
    """small_indep_shared: 100% of its MPI-IO writes are small and independent (structural: a warning by its
    rule), shown as info because collective I/O would cost time here. Its summary said "They cost the busiest
    rank only 644 ms: not worth changing for this run" (644 ms of a 1.2 s run) before giving that reason."""
    n = one(run(GEN / "small_indep_shared.darshan"), "NO_COLLECTIVE_IO")
    assert n["severity"] == "info"
    assert "not worth" not in n["summary"]
    assert "(Shown as info: its fix would cost about" in n["summary"]
    # a pattern its rule itself finds cheap (28% of the requests, 224 ms of a 30 s run) keeps saying so
    m = one(run(PUB / "nonmpi_dxt_anonymized" / "nonmpi_dxt_anonymized.darshan"), "MISALIGNED_IO")
    assert m["severity"] == "info" and "They cost the busiest rank at most 224 ms: not worth fixing" in m["summary"]
