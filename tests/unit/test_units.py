"""One reading of the numbers people type: every spelling of a size means the same bytes in a threshold
(`-t`, `--config`), a knob (`run --set`, `--set-file`) and a tune space (`--space`), through the code each of
those options runs (`iolens.units` underneath)."""
from __future__ import annotations

import pytest

from iolens import units
from iolens.analysis.diagnosis.thresholds import load_config, load_fs_profile, parse_assignment
from iolens.knobs import KnobError, parse_setting, read_knob_file
from iolens.tune.space import SpaceError, load_space

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

# spelling -> bytes: binary multiples, whatever the case or the B; `kb` is 1024 bytes too (HPC usage)
SIZES = [
    ("65536", 64 * KiB), ("64k", 64 * KiB), ("64K", 64 * KiB), ("64kb", 64 * KiB), ("64KB", 64 * KiB),
    ("64kB", 64 * KiB), ("64KiB", 64 * KiB), ("64kib", 64 * KiB), ("64 KiB", 64 * KiB), ("0.0625MiB", 64 * KiB),
    ("1.5k", 1536), ("1M", MiB), ("1mb", MiB), ("1MB", MiB), ("1MiB", MiB), ("4 MiB", 4 * MiB), ("1G", GiB),
    ("1GB", GiB), ("1GiB", GiB), ("2T", 2 << 40), ("1_048_576", MiB), ("100B", 100), ("100", 100),
]


def as_threshold(text):
    return parse_assignment(f"small_request_bytes={text}")[1]  # what `-t NAME=VALUE` runs


def as_threshold_file(text, tmp_path):
    path = tmp_path / "iolens.toml"
    path.write_text(f'[thresholds]\nsmall_request_bytes = "{text}"\n')
    return load_config(str(path))["small_request_bytes"]  # --config


def as_knob(text):
    return parse_setting(f"hdf5.alignment={text}")[1]  # run --set


def as_romio_hint(text):
    return parse_setting(f"romio.cb_buffer_size={text}")[1]  # run --set, a ROMIO hint in bytes


def as_knob_file(text, tmp_path):
    path = tmp_path / "knobs.toml"
    path.write_text(f'[hdf5]\nalignment = "{text}"\n')
    return read_knob_file(path)["hdf5.alignment"]  # run --set-file, and tune's best.toml


def as_space(text, tmp_path):
    """(a list value of an HDF5 knob, a ROMIO hint's list value, a range's bound) of a tune --space file"""
    path = tmp_path / "space.toml"
    path.write_text(f'[hdf5]\nalignment = ["{text}"]\n[romio]\ncb_buffer_size = ["{text}"]\n'
                    f'striping_unit = {{min = "{text}", max = "{text}"}}\n')
    space = load_space(path, ["app"])
    return tuple(k.values[0] for k in space.knobs)


@pytest.mark.parametrize("text, size", SIZES)
def test_a_size_means_the_same_bytes_everywhere(text, size, tmp_path):
    assert units.parse_size(text) == size
    assert as_threshold(text) == size and as_threshold_file(text, tmp_path) == size
    assert as_knob(text) == size and as_romio_hint(text) == size and as_knob_file(text, tmp_path) == size
    assert as_space(text, tmp_path) == (size, size, size)


@pytest.mark.parametrize("text, why", [
    ("lots", "cannot read 'lots' as a size"), ("64x", "unknown unit in '64x'"), ("-64k", "must not be negative"),
    ("0.5", "not a whole number of bytes"), ("0.1k", "not a whole number of bytes"), ("10%", "percentage"),
    ("64 kbit", "unknown unit"),
])
def test_a_bad_size_is_refused_everywhere_with_one_reason(text, why, tmp_path):
    with pytest.raises(units.UnitError, match=why):
        units.parse_size(text)
    with pytest.raises(ValueError, match=f"small_request_bytes: .*{why}"):
        as_threshold(text)
    with pytest.raises(KnobError, match=f"--set hdf5.alignment={text}: .*{why}"):
        as_knob(text)
    with pytest.raises(SpaceError, match=f"hdf5.alignment = '{text}': .*{why}"):
        as_space(text, tmp_path)


@pytest.mark.parametrize("text, seconds", [
    ("2", 2.0), ("2s", 2.0), ("500ms", 0.5), ("500 ms", 0.5), ("250us", 250e-6), ("250µs", 250e-6),
    ("100ns", 100e-9), ("1min", 60.0), ("1.5h", 5400.0), ("1e-3", 1e-3),
])
def test_a_duration_reads_the_same_in_a_threshold_and_a_file_system_profile(text, seconds, tmp_path):
    assert units.parse_duration(text) == pytest.approx(seconds)
    assert parse_assignment(f"serialized_gap={text}")[1] == pytest.approx(seconds)
    profile = tmp_path / "fs.toml"
    profile.write_text(f'[fs]\nrequest_latency = "{text}"\n')
    assert load_fs_profile(str(profile))["fs_request_latency"] == pytest.approx(seconds)


@pytest.mark.parametrize("text, why", [("5m", "unknown unit"), ("10KiB", "unknown unit"), ("-1s", "negative"),
                                       ("soon", "cannot read 'soon' as a duration")])
def test_a_bad_duration_is_refused(text, why):
    with pytest.raises(ValueError, match=f"serialized_gap: .*{why}"):
        parse_assignment(f"serialized_gap={text}")


@pytest.mark.parametrize("text, share", [("10%", 0.1), ("0.1", 0.1), ("100%", 1.0), ("0", 0.0), ("12.5 %", 0.125)])
def test_a_share_is_a_fraction_or_a_percentage(text, share):
    assert units.parse_share(text) == pytest.approx(share)
    assert parse_assignment(f"small_min_share={text}")[1] == pytest.approx(share)


@pytest.mark.parametrize("name, text, why", [
    ("small_min_share", "150%", "between 0 and 1"), ("small_min_share", "1.5", "between 0 and 1"),
    ("small_min_ops", "5%", "percentage only fits a share or a ratio"), ("small_min_ops", "1k", "unknown unit"),
])
def test_shares_and_counts_refuse_what_does_not_fit(name, text, why):
    with pytest.raises(ValueError, match=why):
        parse_assignment(f"{name}={text}")


def test_a_ratio_takes_a_percentage():
    assert parse_assignment("imbalance_ratio=150%")[1] == pytest.approx(1.5)
    assert parse_assignment("imbalance_ratio=3")[1] == 3.0


@pytest.mark.parametrize("size, text", [(MiB, "1MiB"), (64 * KiB, "64KiB"), (3000, "3000"), (0, "0"),
                                        (5 * GiB, "5GiB"), (1536, "1536")])
def test_format_size_reads_back(size, text):
    assert units.format_size(size) == text and units.parse_size(text) == size
