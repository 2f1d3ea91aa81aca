"""The knob namespace on hand-built inputs: knob files (TOML, dotted keys or tables), settings and their sizes,
suggested values, and the `iolens run --set` lines the recommendations carry (the knobs on real programs:
tests/integration/run/test_knobs.py)."""
from __future__ import annotations

import pytest

from iolens.analysis.diagnosis.findings import _advice as rec
from iolens.analysis.diagnosis.findings.hdf5_metadata import hdf5_metadata_cache
from iolens.knobs import KnobError, knob_file_text, parse_setting, read_knob_file, suggest

MiB = 1 << 20


def test_knob_files_dotted_keys_and_tables_are_the_same(tmp_path):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text('romio.cb_nodes = 2\nhdf5.alignment = "1MiB"\n"env.OMP_NUM_THREADS" = 4\n')
    b.write_text('[romio]\ncb_nodes = "2"\n[hdf5]\nalignment = 1048576\n[env]\nOMP_NUM_THREADS = "4"\n')
    assert read_knob_file(a) == read_knob_file(b) == {"romio.cb_nodes": "2", "hdf5.alignment": MiB,
                                                      "env.OMP_NUM_THREADS": "4"}
    best = tmp_path / "best.toml"  # what tune writes, `iolens run --set-file` reads back
    best.write_text(knob_file_text({"hdf5.alignment": MiB, "hdf5.coll_metadata": "off", "romio.cb_nodes": 4}))
    assert read_knob_file(best) == {"hdf5.alignment": MiB, "hdf5.coll_metadata": "off", "romio.cb_nodes": "4"}
    assert '[hdf5]\nalignment = "1MiB"' in best.read_text()


def test_parse_and_suggest():
    assert parse_setting("hdf5.alignment=4 MiB") == ("hdf5.alignment", 4 * MiB)
    assert parse_setting("hdf5.chunk_cache=64k") == ("hdf5.chunk_cache", 64 * 1024)
    assert parse_setting("hdf5.coll_metadata=1") == ("hdf5.coll_metadata", "on")
    with pytest.raises(KnobError, match="must be at least 1"):
        parse_setting("hdf5.alignment=0")
    with pytest.raises(KnobError, match="unknown knob"):
        parse_setting("lustre.stripe=4")
    assert 4 * MiB in suggest("hdf5.alignment", stripe_size=4 * MiB, request_size=6 * MiB)
    assert suggest("hdf5.coll_metadata", app_value="on") == ["off", "on"]  # the application's own choice, undone first
    assert suggest("romio.cb_nodes", ranks=12) == [1, 2, 4, 8, 12]
    assert suggest("hdf5.transfer") == ["collective", "independent"]


def test_recommendations_carry_a_run_line_that_iolens_run_accepts():
    recs = [rec.hdf5_collective_transfer(), rec.hdf5_collective_metadata(), *hdf5_metadata_cache(),
            rec.hdf5_alignment(4 * MiB), rec.hdf5_no_fill(), rec.netcdf_no_fill(), rec.netcdf_collective()]
    for r in recs:
        words = r.try_now.split()
        assert words[:2] == ["iolens", "run"] and "--" in words, r.title
        sets = [words[i + 1] for i, w in enumerate(words) if w == "--set"]
        assert sets and all(parse_setting(s) for s in sets)
        assert r.to_dict()["try_now"] == r.try_now
    assert "--set hdf5.alignment=4MiB --set hdf5.alignment_threshold=64KiB" in recs[3].try_now
