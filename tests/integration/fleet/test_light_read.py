"""The fleet's light read: `read_raw(path, regions=...)` inflates only the regions the features use, and the
features (and file rows) it gives are the full read's, on every shared log."""
from __future__ import annotations

import math

import polars as pl
import pytest

from iolens.errors import LogError
from iolens.fleet import store as fleet_store
from iolens.fleet.build import build
from iolens.fleet.features import FEATURE_REGIONS, FILE_ROW_REGIONS, file_rows, job_features
from iolens.reader.log import read_raw

from support.corpus import all_logs, log_id


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b and type(a) is type(b)


def _read(path, regions=None):
    try:
        return read_raw(str(path), regions=regions), None
    except LogError as exc:
        return None, exc.message


@pytest.mark.parametrize("path", all_logs(), ids=log_id)
def test_light_read_gives_the_full_reads_jobs_row(path, logs_dir):
    full, full_error = _read(path)
    light, light_error = _read(path, FILE_ROW_REGIONS)
    if full_error:
        # a log corrupt only in a region the features skip would be a jobs row here: none of the shared
        # logs is, so both reads must refuse it alike
        assert light_error == full_error
        return
    assert light_error is None
    want, got = job_features(full, str(path)), job_features(light, str(path))
    assert list(got) == list(want)
    differ = {k: (want[k], got[k]) for k in want if not _same(want[k], got[k])}
    assert not differ
    assert file_rows(light, str(path)) == file_rows(full, str(path))


def test_light_read_skips_what_the_features_do_not_use(generated):
    path = str(generated / "file_per_process.darshan")
    full, light = read_raw(path), read_raw(path, regions=FEATURE_REGIONS)
    assert full.names and not light.names
    # every module is still listed, with its partial flag, whether read or not
    assert [(m.name, m.partial) for m in light.modules] == [(m.name, m.partial) for m in full.modules]
    skipped = [m for m in light.modules if m.supported and m.name not in FEATURE_REGIONS]
    assert all(m.records == 0 and "not read" in m.note for m in skipped)
    assert set(light.counters) <= FEATURE_REGIONS and set(light.dxt) <= FEATURE_REGIONS
    assert set(light.dxt) == set(full.dxt)  # DXT is still read: its operation counts are features


def test_heatmap_is_not_inflated_by_the_light_read(logs_dir):
    with_heatmap = next((p for p in all_logs() if p.stat().st_size < 2 << 20 and _read(p)[0]
                         and _read(p)[0].heatmap), None)
    if with_heatmap is None:
        pytest.skip("no shared log has a heatmap")
    assert read_raw(str(with_heatmap), regions=FEATURE_REGIONS).heatmap == []


@pytest.mark.slow
def test_no_diagnose_build_has_the_diagnosed_builds_features(tmp_path, generated):
    logs = sorted(generated.glob("*.darshan"))[:6]
    build(logs, tmp_path / "full", diagnose=True, scheduler="sync")
    build(logs, tmp_path / "light", diagnose=False, scheduler="sync", files=True)
    full, light = fleet_store.read(tmp_path / "full", "jobs"), fleet_store.read(tmp_path / "light", "jobs")
    cols = [c for c in light.columns if c != "diagnosed"]
    assert light.height == len(logs)
    assert light.select(cols).sort("path").equals(full.select(cols).sort("path"))
    files = fleet_store.read(tmp_path / "light", "files")
    assert files.filter(pl.col("file").str.starts_with("<record")).height == 0  # names were read for --files


def test_a_region_left_out_is_not_even_inflated(tmp_path, generated):
    # garbage in the name records: the full read refuses the log, the features' read never looks there
    from iolens.reader.header import parse_header

    data = bytearray((generated / "file_per_process.darshan").read_bytes())
    names = parse_header(bytes(data), len(data)).name_region
    data[names.offset:names.offset + names.length] = b"\xff" * names.length
    bad = tmp_path / "bad_names.darshan"
    bad.write_bytes(bytes(data))
    with pytest.raises(LogError):
        read_raw(str(bad))
    assert job_features(read_raw(str(bad), regions=FEATURE_REGIONS), str(bad))["posix_files"] > 0
