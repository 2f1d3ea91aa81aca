"""A Recorder trace's explorer page in the real browser: its reads and writes drawn per layer and rank, as
a DXT trace's are."""
from __future__ import annotations


import polars as pl
import pytest

from iolens import read
from iolens import report as write_report  # the pipeline's: diagnoses, then renders

from support.browser import LoadedPage

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")


def test_shared_header_page(browser, tmp_path, logs_dir):
    trace = read(logs_dir / "recorder" / "shared_header")
    html = tmp_path / "shared_header.html"
    write_report(trace, html)
    p = LoadedPage(browser, html)
    st = p.state()
    assert p.errors == []
    assert st["ready"] and st["layers"] == ["MPI-IO", "POSIX"] and st["ranks"] == [0, 3]
    per_layer = trace.segments.group_by("module").len()
    want = {("MPI-IO" if m == "DXT_MPIIO" else "POSIX"): n for m, n in per_layer.iter_rows()}
    assert st["drawn"] == want  # 36 writes + rank 0's read, in each layer
    # rank 0's read of rank 1's first MiB is on rank 0's POSIX row
    assert p.js("([l, r]) => window.iolens.findOp(l, r) !== null", ["POSIX", 0])
    reads = trace.segments.filter(pl.col("op") == "read")
    assert reads["rank"].to_list() == [0, 0]
    assert "h.dat" in p.page.inner_text("body")
    # barriers, syncs, opens and closes are thin marks on each rank's row, in both layers
    dumps = [(logs_dir / "recorder" / "shared_header" / "_text" / f"{r}.txt").read_text().splitlines()
             for r in range(4)]
    marked = ("MPI_Barrier", "fsync", "MPI_File_sync", "open", "MPI_File_open", "close", "MPI_File_close")
    per_rank = [sum(line.split(" ")[2] in marked for line in d) for d in dumps]
    assert st["marks"] == {"MPI-IO": sum(per_rank), "POSIX": sum(per_rank)}
    legend = p.page.inner_text("#timeline-legend")
    assert all(k in legend for k in ("barrier", "sync", "open", "close"))
    zoomed = p.js("() => window.iolens.zoom(0, 1, 0, 1)")
    assert zoomed["marks"]["POSIX"] == per_rank[0]
    assert p.errors == []
    p.close()


def test_darshan_page_has_no_call_marks(browser, tmp_path, logs_dir):
    html = tmp_path / "d.html"
    write_report(read(logs_dir / "generated" / "collective_2phase.darshan"), html)
    p = LoadedPage(browser, html)
    st = p.state()
    assert p.errors == [] and st["marks"] == {"MPI-IO": 0, "POSIX": 0}
    assert "barrier" not in p.page.inner_text("#timeline-legend")
    p.close()
