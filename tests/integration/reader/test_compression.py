"""Compression types, multi-stream regions and byte order.

Real logs are re-encoded with tests/support/logtools.py (standard library only): every region as bzip2 (one
stream and several), uncompressed (type 2, the runtime's mmap mode) and as many independent zlib
streams (what a many-rank runtime writes), with freshly computed header maps. iolens must read
identical tables from each. libdarshan-util (the reference) reads the uncompressed and multi-stream
copies too, which shows the rewritten logs are valid; PyDarshan's bundled library has no bzip2, so bzip2
is checked against iolens' reading of the original.

Byte order: the corpus has the same program (mpi-io-test, 4 ranks, 64 MiB through MPI-IO) logged by
every release on big-endian ppc64 and little-endian x86_64; the deterministic counters must agree.
"""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import iolens

from support.logtools import read_parts, region_spans, rewrite_log

from support.corpus import all_logs, each_kind, log_id

# small and medium logs of every format version and module mix; the big DXT ones are in their own test
SMALL = [p for p in all_logs() if p.stat().st_size < 600_000]
VARIANTS = [("bzip2", 1), ("bzip2", 4), ("none", 1), ("zlib", 9)]


def assert_same_tables(a: iolens.Log, b: iolens.Log) -> None:
    ja, jb = dict(a.job), dict(b.job)
    ja.pop("compression"), jb.pop("compression")
    assert ja == jb
    assert a.file_names() == b.file_names()
    assert a.files.equals(b.files)
    assert a.counters.keys() == b.counters.keys()
    for mod in a.counters:
        assert a.counters[mod].equals(b.counters[mod]), mod
    assert a.dxt_records.equals(b.dxt_records)
    assert a.segments.equals(b.segments)
    assert a.lustre.equals(b.lustre)
    assert a.heatmap.equals(b.heatmap)
    assert a.notes == b.notes


@pytest.mark.parametrize("path", each_kind(SMALL), ids=log_id)
def test_reencoded_logs_read_the_same(logs_dir, tmp_path, path):
    original = iolens.read(path)
    for compression, streams in VARIANTS:
        dst = rewrite_log(path, tmp_path / f"{compression}{streams}.darshan", compression=compression,
                          streams=streams)
        copy = iolens.read(dst)
        assert copy.job["compression"] == compression
        assert_same_tables(original, copy)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["generated/scale_1p6M.darshan",
                                  "public/dxt-explorer-samples/jlbez_IO_test5.Linux_id1797024_12-1-78642-14680324743816948210_159.darshan"])
def test_reencoded_big_dxt_logs(logs_dir, tmp_path, name):
    """1.6 M segments re-cut into 50 zlib streams (records straddle stream ends), and uncompressed."""
    path = logs_dir / name
    original = iolens.read(path)
    for compression, streams in [("zlib", 50), ("none", 1)]:
        copy = iolens.read(rewrite_log(path, tmp_path / f"{compression}.darshan", compression=compression,
                                       streams=streams))
        assert copy.segments.equals(original.segments)
        assert copy.dxt_records.equals(original.dxt_records)


REFERENCE_CHECKED = [
    "public/darshan-logs/release_logs/mpi-io-test-ppc64-3.1.6.darshan",  # big-endian, 3.10, DXT v1
    "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.0.0.darshan",  # 3.00 name records
    "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan",  # LUSTRE v2, APMPI
    "public/darshan-logs/e3sm_io_heatmaps_and_dxt/e3sm_io_heatmap_only.darshan",
    "public/pydarshan-examples/sample-dxt-simple.darshan",
    "generated/fill_rank0.darshan",
]


# libdarshan-util 3.5.0 cannot read uncompressed regions bigger than its 1 MiB staging buffer:
# darshan_log_noz_read() copies each chunk to the start of the caller's buffer instead of after the bytes
# already copied, so a record that straddles a staging-buffer refill comes out corrupt (records are lost,
# or it crashes). iolens reads such logs correctly (test_reencoded_logs_read_the_same, _big_dxt_logs), but
# the reference is only asked about uncompressed logs whose regions all fit in the staging buffer.
NOZ_STAGING_BUFFER = 1 << 20


@pytest.mark.parametrize("rel", REFERENCE_CHECKED)
def test_reencoded_logs_match_the_reference(logs_dir, tmp_path, rel):
    """libdarshan-util reads the rewritten logs too, and agrees with iolens on them."""
    from support.reference import KNOWN_DIFFERENCES, compare_counters, compare_dxt, compare_heatmap, \
        compare_job, compare_lustre, compare_names, read_reference

    parts = read_parts(logs_dir / rel)
    small = max(len(r) for r in [parts.job, parts.names, *parts.modules.values()]) < NOZ_STAGING_BUFFER
    for compression, streams in [("none", 1)] * small + [("zlib", 5)]:
        dst = rewrite_log(logs_dir / rel, tmp_path / f"{compression}.darshan", compression=compression,
                          streams=streams)
        ref, log = read_reference(dst), iolens.read(dst)
        known = KNOWN_DIFFERENCES.get(rel, {})
        diffs = compare_job(log, ref, known) + compare_names(log, ref) + compare_dxt(log, ref) + \
            compare_lustre(log, ref) + compare_heatmap(log, ref)
        for mod in log.counters:
            diffs += compare_counters(log, ref, mod, known)
        assert not diffs, diffs


def test_multistream_regions_really_have_many_streams(logs_dir, tmp_path):
    """The rewriting does what it says: regions are cut into several streams, none of them empty."""
    import zlib

    src = logs_dir / "generated/fill_rank0.darshan"
    dst = rewrite_log(src, tmp_path / "many.darshan", compression="zlib", streams=7)
    raw = dst.read_bytes()
    off, n = region_spans(dst)["DXT_MPIIO"]
    data, count = raw[off:off + n], 0
    while data:
        d = zlib.decompressobj()
        assert d.decompress(data)
        data, count = d.unused_data, count + 1
    assert count == 7


def test_real_logs_have_multistream_regions(logs_dir):
    """The 1,024-rank sample log has one zlib stream per rank in its DXT regions (what iolens must loop over)."""
    import zlib

    (path,) = (logs_dir / "public/dxt-explorer-samples").glob("jeanbez_8_benchmark_parallel_*.darshan")
    raw = path.read_bytes()
    off, n = region_spans(path)["DXT_POSIX"]
    data, count = raw[off:off + n], 0
    while data:
        d = zlib.decompressobj()
        d.decompress(data)
        data, count = d.unused_data, count + 1
    assert count > 100
    assert iolens.read(path).dxt_records.height == 2048


# --- byte order ---------------------------------------------------------------------------------------
RELEASES = ["3.0.0", "3.0.1", "3.1.0", "3.1.1", "3.1.2", "3.1.3", "3.1.4", "3.1.5", "3.1.6", "3.1.7", "3.1.8"]
DETERMINISTIC = {
    "POSIX": ["POSIX_OPENS", "POSIX_READS", "POSIX_WRITES", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN",
              "POSIX_MAX_BYTE_READ", "POSIX_MAX_BYTE_WRITTEN", "POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES",
              "POSIX_SEQ_READS", "POSIX_SEQ_WRITES", "POSIX_SIZE_READ_1M_4M", "POSIX_SIZE_WRITE_1M_4M",
              "POSIX_SIZE_READ_10M_100M", "POSIX_SIZE_WRITE_10M_100M", "POSIX_ACCESS1_ACCESS",
              "POSIX_ACCESS1_COUNT", "POSIX_FASTEST_RANK_BYTES", "POSIX_SLOWEST_RANK_BYTES"],
    "MPI-IO": ["MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS", "MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES",
               "MPIIO_COLL_READS", "MPIIO_COLL_WRITES", "MPIIO_BYTES_READ", "MPIIO_BYTES_WRITTEN",
               "MPIIO_RW_SWITCHES", "MPIIO_SIZE_READ_AGG_10M_100M", "MPIIO_SIZE_WRITE_AGG_10M_100M",
               "MPIIO_ACCESS1_ACCESS", "MPIIO_ACCESS1_COUNT"],
}


@pytest.mark.parametrize("release", RELEASES)
def test_big_endian_matches_little_endian(logs_dir, release):
    be = iolens.read(logs_dir / f"public/darshan-logs/release_logs/mpi-io-test-ppc64-{release}.darshan")
    le = iolens.read(logs_dir / f"public/darshan-logs/release_logs/mpi-io-test-x86_64-{release}.darshan")
    assert (be.job["byte_order"], le.job["byte_order"]) == ("big", "little")
    assert be.job["log_version"] == le.job["log_version"]
    assert be.job["nprocs"] == le.job["nprocs"] == 4
    assert be.job["exe"].split()[0].endswith("mpi-io-test") and le.job["exe"].split()[0].endswith("mpi-io-test")
    assert [m.name for m in be.modules if m.name != "BG/Q"] == [m.name for m in le.modules]
    assert [m.version for m in be.modules if m.name != "BG/Q"] == [m.version for m in le.modules]
    for mod, cols in DETERMINISTIC.items():
        a, b = be.counters[mod], le.counters[mod]
        assert a.height == b.height
        assert a.select(cols).equals(b.select(cols)), mod
        assert a["POSIX_BYTES_WRITTEN" if mod == "POSIX" else "MPIIO_BYTES_WRITTEN"].sum() == 64 << 20
    for log in (be, le):
        # swapped wrongly, timestamps would be ~1e-300 or ~1e+300
        for mod, table in log.counters.items():
            ts = table.select(pl.col("^.*_F_.*TIMESTAMP$")).to_numpy()
            assert ((ts == -1) | ((ts >= 0) & (ts <= log.job["run_time"] + 1))).all(), mod
        assert 1e9 < log.job["start_time"] < 2e9
    if be.has_dxt or le.has_dxt:
        for a, b in [(be.segments, le.segments)]:
            assert a.height == b.height
            assert a.select("module", "rank", "op", "length").equals(b.select("module", "rank", "op", "length"))
            assert ((a["start"] >= 0) & (a["end"] >= a["start"]) & (a["end"] < be.job["run_time"] + 1)).all()


def test_read_parts_is_lossless(logs_dir, tmp_path):
    """logtools writes back exactly the bytes it read when nothing changes (single-stream logs)."""
    src = logs_dir / "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan"
    parts = read_parts(src)
    assert parts.version == "3.41" and parts.byte_order == "<"
    a = iolens.read(src)
    b = iolens.read(rewrite_log(src, tmp_path / "same.darshan"))
    assert_same_tables(a, b)
    assert np.array_equal(a.counters["POSIX"].to_numpy(), b.counters["POSIX"].to_numpy())


# --- parallel inflation: guessed stream starts must never change the result -------------------------
@pytest.mark.parametrize("compression,streams", [("zlib", 1), ("zlib", 13), ("zlib", 200), ("bzip2", 5)])
def test_parallel_inflate_with_guessed_stream_starts(logs_dir, tmp_path, monkeypatch, compression, streams):
    """Tiny pieces and 4 threads: many guesses land inside streams (false zlib headers), some on real
    starts; whatever they hit, iolens reads what the sequential inflation reads."""
    from iolens.reader import regions

    src = logs_dir / "generated/small_indep_shared.darshan"
    dst = rewrite_log(src, tmp_path / "x.darshan", compression=compression, streams=streams)
    sequential = iolens.read(dst)  # default settings: 1.2 MB log, inflated sequentially
    monkeypatch.setattr(regions, "MIN_PIECE", 4096)
    monkeypatch.setattr(regions, "MAX_PIECE", 4096)
    monkeypatch.setenv("IOLENS_THREADS", "4")
    assert_same_tables(sequential, iolens.read(dst))


def test_parallel_inflate_reports_corruption(logs_dir, tmp_path, monkeypatch):
    from iolens.reader import regions

    src = logs_dir / "generated/small_indep_shared.darshan"
    dst = rewrite_log(src, tmp_path / "x.darshan", compression="zlib", streams=16)
    data = bytearray(dst.read_bytes())
    off, n = region_spans(dst)["DXT_POSIX"]
    data[off + 3 * n // 4] ^= 0x40  # inside a later stream, i.e. a piece run by another thread
    dst.write_bytes(bytes(data))
    monkeypatch.setattr(regions, "MIN_PIECE", 4096)
    monkeypatch.setattr(regions, "MAX_PIECE", 4096)
    monkeypatch.setenv("IOLENS_THREADS", "4")
    with pytest.raises(iolens.LogError, match="DXT_POSIX"):
        iolens.read(dst)


JEANBEZ = "public/dxt-explorer-samples/jeanbez_8_benchmark_parallel_*.darshan"


def test_dxt_walk_matches_a_plain_decode(logs_dir):
    """The native DXT walker gives the segments a plain numpy decode of the inflated region gives."""
    from iolens.reader import dxt, regions

    (path,) = logs_dir.glob(JEANBEZ)
    parts = read_parts(path)
    region = bytes(parts.module("DXT_POSIX"))
    fields = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])
    expected, ranks, pos = [], [], 0
    while pos < len(region):
        rank, = np.frombuffer(region, dtype="<i8", count=1, offset=pos + 8)
        wc, rc = np.frombuffer(region, dtype="<i8", count=2, offset=pos + 88)
        expected.append(np.frombuffer(region, dtype=fields, count=int(wc + rc), offset=pos + 104))
        ranks.append(rank)
        pos += 104 + 32 * int(wc + rc)
    expected = np.concatenate(expected)
    (cols,) = regions.read_regions(region, [("DXT_POSIX", 0, len(region), dxt.layout("DXT_POSIX", 1, "<"))], "none")
    recs = dxt.records("DXT_POSIX", cols)
    assert len(expected) == recs.total > 100_000
    assert recs.ranks.tolist() == ranks
    for name in fields.names:
        assert np.array_equal(recs.column(name), expected[name]), name


@pytest.mark.parametrize("threads,min_piece,buffered", [(2, 1 << 14, 32 << 20), (4, 1 << 12, 32 << 20),
                                                       (2, 1 << 14, 1000)])
def test_dxt_pieces_walked_in_parallel_read_the_same(logs_dir, monkeypatch, threads, min_piece, buffered):
    """A real 1,024-rank log (one stream per rank): pieces inflated and walked by worker threads give the
    tables one thread gives, and the parallel walk was really used (several chunks of segments). With a
    1,000-byte buffer, each worker walks its pieces as they are inflated (the way for streams far bigger
    than a piece)."""
    from iolens.reader import regions

    (path,) = logs_dir.glob(JEANBEZ)
    monkeypatch.setenv("IOLENS_THREADS", "1")
    sequential = iolens.read(path)
    assert len(sequential.raw.dxt["DXT_POSIX"].chunks) == 1
    monkeypatch.setenv("IOLENS_THREADS", str(threads))
    monkeypatch.setattr(regions, "MIN_PIECE", min_piece)
    monkeypatch.setattr(regions, "MAX_PIECE", min_piece)
    monkeypatch.setattr(regions, "BUFFERED", buffered)
    parallel = iolens.read(path)
    assert len(parallel.raw.dxt["DXT_POSIX"].chunks) > 20
    assert_same_tables(sequential, parallel)
