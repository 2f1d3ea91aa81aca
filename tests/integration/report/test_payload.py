"""`iolens report`: the page's payload, its encoding, the filters, and the phase/heavy-rank analysis.

The browser tests (test_report_browser.py) check what a user sees; these check the data under it.
"""
from __future__ import annotations

import base64
import json
import re
import zlib

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

import iolens
from iolens.analysis.timeline import io_phases, phase_of_segments, timeline_analysis
from iolens.cli.main import cli
from iolens.views.html import Filters, build_payload, render_page
from iolens.views.html.encode import DTYPES, Blob, script_json

DXT_EXPLORER_SAMPLE = ("dxt-explorer-samples/jlbez_IO_test5.Linux_id1797024_12-1-78642-"
                       "14680324743816948210_159.darshan")


def decode(meta: dict, blob: Blob) -> dict:
    """What the page's decode.js does: inflate, concatenate, un-shuffle each column."""
    cols = {}
    for part in blob.encode().values():
        raw = b"".join(zlib.decompress(base64.b64decode(c)) for c in part["chunks"])
        for c in part["columns"]:
            dtype = np.dtype(DTYPES[c["dtype"]]).newbyteorder("<")
            n, size = c["count"], dtype.itemsize
            planes = np.frombuffer(raw, dtype=np.uint8, count=n * size, offset=c["offset"]).reshape(size, n)
            cols[c["name"]] = planes.T.copy().view(dtype).ravel()
    return cols


def rebuild(meta: dict, cols: dict) -> pl.DataFrame:
    """The page's buildTrace: undo the per-(layer, rank) delta encoding."""
    t, nranks = meta["trace"], meta["nranks"]
    ptr = cols["rank_ptr"].astype(np.int64)
    rows = []
    for g in range(len(t["layers"]) * nranks):
        a, b = ptr[g], ptr[g + 1]
        if a == b:
            continue
        start_q = np.cumsum(cols["start"][a:b].astype(np.int64))
        rows.append(pl.DataFrame({
            "layer": [t["layers"][g // nranks]] * (b - a), "rank": np.full(b - a, g % nranks),
            "start": start_q * t["tick"], "end": (start_q + cols["dur"][a:b]) * t["tick"],
            "offset": np.cumsum(cols["offset"][a:b].astype(np.float64)).astype(np.int64),
            "length": cols["length"][a:b].astype(np.int64), "op": cols["op"][a:b].astype(np.int64),
            "file": cols["file"][a:b].astype(np.int64)}))
    return pl.concat(rows)


@pytest.mark.parametrize("name", ["generated/collective_2phase.darshan", "generated/fill_rank0.darshan",
                                  "public/" + DXT_EXPLORER_SAMPLE])
def test_embedded_trace_round_trips(logs_dir, name):
    log = iolens.read(logs_dir / name)
    meta, blob = build_payload(log, insights=[])
    got = rebuild(meta, decode(meta, blob))
    seg = log.segments
    files = log.files["file_id"].to_list()
    want = seg.select(
        pl.col("module").cast(pl.String).replace({"DXT_MPIIO": "MPI-IO", "DXT_POSIX": "POSIX"}).alias("layer"),
        "rank", "start", "end", "offset", "length", pl.col("op").to_physical().cast(pl.Int64).alias("op"),
        pl.col("file_id").replace_strict({f: i for i, f in enumerate(files)}, return_dtype=pl.Int64).alias("file"))
    key = ["layer", "rank", "start", "offset"]
    got, want = got.sort(key), want.sort(key)
    assert got.height == want.height == meta["trace"]["ops"]
    for col in ("layer", "rank", "offset", "length", "op", "file"):
        assert got[col].to_list() == want[col].to_list(), col
    tick = meta["trace"]["tick"]
    assert np.abs(got["start"].to_numpy() - want["start"].to_numpy()).max() <= tick
    assert np.abs(got["end"].to_numpy() - want["end"].to_numpy()).max() <= 2 * tick


def test_overview_marks_busy_ranks(logs_dir):
    log = iolens.read(logs_dir / "generated/collective_2phase.darshan")
    meta, blob = build_payload(log, insights=[])
    cols = decode(meta, blob)
    ov = meta["overview"]
    posix = meta["trace"]["layers"].index("POSIX")
    writes = cols[f"overview_{posix}_0"].reshape(ov["rows"], ov["bins"])
    busy_rows = set(np.flatnonzero(writes.sum(axis=1)).tolist())
    assert busy_rows == {0, 1}  # the two collective-buffering aggregators


def test_script_json_cannot_close_the_script():
    text = script_json({"name": "</script><img src=x onerror=alert(1)>&\u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text)["name"] == "</script><img src=x onerror=alert(1)>&\u2028"


@pytest.mark.smoke
def test_cli_writes_one_self_contained_page(logs_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["report", str(logs_dir / "generated/fill_rank0.darshan")])
    assert result.exit_code == 0, result.output
    out = tmp_path / "fill_rank0.html"
    assert result.output.strip() == "fill_rank0.html"
    html = out.read_text()
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", html, re.I)
    assert "http://" not in html and "https://" not in html
    assert 20_000 < out.stat().st_size < 400_000


def test_cli_output_option_and_filters(logs_dir, tmp_path):
    out = tmp_path / "page.html"
    log = logs_dir / "generated/small_indep_shared.darshan"
    result = CliRunner().invoke(cli, ["report", str(log), "-o", str(out), "--from", "2", "--to", "3",
                                      "--start", "0.5", "--end", "0.9", "--file", "small_indep_shared.dat"])
    assert result.exit_code == 0, result.output
    meta = json.loads(re.search(r'id="iolens-meta">(.*?)</script>', out.read_text(), re.S).group(1))
    seg = iolens.read(log).segments
    want = seg.filter(pl.col("rank").is_between(2, 3) & (pl.col("end") >= 0.5) & (pl.col("start") <= 0.9))
    assert meta["trace"]["ops"] == want.height > 0
    assert meta["filters"] == {"start": 0.5, "end": 0.9, "rank_from": 2, "rank_to": 3,
                               "file": "small_indep_shared.dat"}


def test_cli_unknown_file_is_a_one_line_error(logs_dir, tmp_path):
    from iolens.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["report", str(logs_dir / "generated/fill_rank0.darshan"), "-o", str(tmp_path / "x.html"),
              "--file", "no-such-file"])
    assert exc.value.code == 2


def test_operation_budget_caps_the_page(logs_dir):
    log = iolens.read(logs_dir / "generated/small_indep_shared.darshan")
    meta, blob = build_payload(log, max_ops=10_000, insights=[])
    t = meta["trace"]
    assert t["ops"] <= 10_000 < t["total_ops"] == log.segments.height
    assert t["cut_at"] is not None
    html = render_page(meta, blob)
    assert len(html) < 400_000


def test_page_without_trace_and_without_mpiio(logs_dir):
    no_dxt = iolens.read(logs_dir / "public/pydarshan-examples/sample-badost.darshan")
    meta, blob = build_payload(no_dxt, insights=[])
    assert meta["trace"]["layers"] == [] and meta["trace"]["ops"] == 0
    assert meta["summary"]["osts"] is not None and meta["summary"]["files"]["rows"]
    render_page(meta, blob)
    fpp = iolens.read(logs_dir / "generated/file_per_process.darshan")
    meta, _ = build_payload(fpp, insights=[])
    assert meta["trace"]["layers"] == ["POSIX"]


def test_truncated_trace_gets_a_banner(logs_dir):
    log = iolens.read(logs_dir / "generated/scale_1p6M_default_cap.darshan")
    meta, _ = build_payload(log, insights=[])
    banners = [b for b in meta["summary"]["banners"] if b["level"] == "critical"]
    assert banners and "truncated" in banners[0]["text"] and "800,000" in banners[0]["text"]


# --- phases, heavy ranks, busiest ranks -----------------------------------------------------------

def test_phases_split_on_idle_gaps():
    start = np.array([0.0, 0.5, 10.0, 10.2, 30.0])
    end = np.array([1.0, 1.2, 11.0, 11.0, 31.0])
    assert phase_of_segments(start, end).tolist() == [0, 0, 1, 1, 2]
    assert phase_of_segments(start, end, max_phases=2).tolist() == [0, 0, 0, 0, 1]


def test_fill_rank0_is_a_heavy_rank(logs_dir):
    log = iolens.read(logs_dir / "generated/fill_rank0.darshan")
    an = timeline_analysis(log.segments)
    for layer in ("MPI-IO", "POSIX"):
        assert an[layer]["busiest"][0]["rank"] == 0
        assert [s["rank"] for s in an[layer]["heavy_ranks"]] == [0]
        assert any(p["heavy"] and p["slowest_rank"] == 0 for p in an[layer]["phases"])


def test_balanced_logs_have_no_heavy_rank(logs_dir):
    for name in ("file_per_process", "collective_2phase"):
        an = timeline_analysis(iolens.read(logs_dir / f"generated/{name}.darshan").segments)
        for layer, info in an.items():
            assert not info["heavy_ranks"], (name, layer)
    an = timeline_analysis(iolens.read(logs_dir / "generated/collective_2phase.darshan").segments)
    assert {b["rank"] for b in an["POSIX"]["busiest"]} == {0, 1}


def test_io_phases_of_empty_segments():
    empty = pl.DataFrame(schema={"rank": pl.Int64, "length": pl.Int64, "start": pl.Float64, "end": pl.Float64})
    assert io_phases(empty) == []


def test_filters_validate():
    from iolens.errors import LogError
    from iolens.views.html.filters import apply_filters

    seg = pl.DataFrame({"rank": [0], "start": [0.0], "end": [1.0], "file_id": pl.Series([1], dtype=pl.UInt64)})
    with pytest.raises(LogError):
        apply_filters(seg, pl.DataFrame({"file_id": [1], "name": ["a"]}), Filters(start=2.0, end=1.0))


def test_page_scripts_are_small_modules_all_inlined():
    from importlib import resources

    from iolens.views.html import compare, fleet, page
    static = resources.files("iolens.views") / "static"
    on_disk = sorted(f.name for f in static.iterdir() if f.name.endswith(".js"))
    # every script on disk is inlined by some page (none left dead), and every page's scripts exist
    assert sorted(set(page.SCRIPTS) | set(compare.SCRIPTS) | set(fleet.SCRIPTS)) == on_disk
    assert page.SCRIPTS[-1] == "app.js"
    for name in on_disk:
        assert len((static / name).read_text(encoding="utf-8").splitlines()) <= 450, name
