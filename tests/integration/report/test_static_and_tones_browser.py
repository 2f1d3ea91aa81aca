"""The pages as a user sees them (issue 31, item 6), in the real Chromium: `report --static` is drawn when the page
has loaded (a screenshot or a PDF taken then shows the data), compare colours each change by what it means,
and a workflow's page gives a layer's timeline only the processes that have that layer."""
from __future__ import annotations

import re
import zlib

import pytest

from support.browser import coloured_pixels
from support.cli import run_iolens
from support.corpus import LOGS

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")

PAIRS = LOGS / "pairs"
GOOD, BAD, WARN, MUTED = "rgb(43, 138, 62)", "rgb(201, 42, 42)", "rgb(230, 119, 0)", "rgb(107, 119, 133)"

# what the page is at its load event: recorded by the page itself, before any test code can wait for it
AT_LOAD = """window.addEventListener("load", () => {
  const st = window.iolens ? window.iolens.state() : null;
  window.__atLoad = {state: st, status: document.getElementById("load-status").textContent};
});"""


def loaded(browser, html, at_load: bool = True):
    """A page opened and returned at its load event (no wait for its decoding), with its errors collected."""
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    if at_load:
        page.add_init_script(AT_LOAD)
    page.goto(html.resolve().as_uri(), wait_until="load")
    return page, errors


def pdf_images(pdf: bytes) -> list:
    """[(width, height, saturated pixels)] of the RGB images of a PDF (Chromium prints each canvas as one, with a
    gray soft mask): the panels as printed."""
    out = []
    objects = list(re.finditer(rb"<<((?:(?!>>).)*?/Subtype\s*/Image(?:(?!>>).)*?)>>\s*stream\r?\n", pdf, re.S))
    for m in objects:
        head = m.group(1)
        if b"/FlateDecode" not in head or b"/DeviceGray" in head:
            continue
        length = int(re.search(rb"/Length\s+(\d+)", head).group(1))
        raw = zlib.decompress(pdf[m.end():m.end() + length])
        w, h = (int(re.search(rb"/%s\s+(\d+)" % k, head).group(1)) for k in (b"Width", b"Height"))
        mask = re.search(rb"/SMask\s+(\d+)\s+0\s+R", head)
        alpha = None
        if mask:
            obj = re.search(rb"\n%s 0 obj\s*<<(.*?)>>\s*stream\r?\n" % mask.group(1), pdf, re.S)
            n = int(re.search(rb"/Length\s+(\d+)", obj.group(1)).group(1))
            alpha = zlib.decompress(pdf[obj.end():obj.end() + n])
        sat = sum(1 for k in range(0, len(raw) - 2, 3)
                  if (alpha is None or alpha[k // 3] > 0) and max(raw[k:k + 3]) - min(raw[k:k + 3]) > 80)
        out.append((w, h, sat))
    return out


def test_a_static_page_is_drawn_when_it_has_loaded(browser, static_pages):
    page, errors = loaded(browser, static_pages / "static.html")
    at = page.evaluate("window.__atLoad")
    st = at["state"]
    assert "drawn at load" in at["status"] and st["ready"]
    assert set(st["modes"].values()) <= {"bars", "density"}  # every operation, not the overview
    assert all(n > 100_000 for n in st["drawn"].values()) and st["transferDrawn"] > 0 and st["spatialDrawn"] > 0
    shot = page.screenshot()  # what a screenshot taken at load shows
    for panel in ("#timeline canvas", "#transfer canvas", "#spatial canvas"):
        assert coloured_pixels(shot, page.locator(panel).bounding_box()) > 2000, panel
    assert errors == []
    page.close()
    # the same log's ordinary page is still decoding at that moment: what --static is for
    page, errors = loaded(browser, static_pages / "dynamic.html")
    at = page.evaluate("window.__atLoad")
    assert not at["state"]["ready"] and "drawn at load" not in at["status"]
    page.evaluate("window.iolens.ready")
    assert page.evaluate("window.iolens.state().ready") and errors == []
    page.close()


def test_a_pdf_printed_at_load_holds_the_drawn_panels(browser, static_pages, tmp_path):
    """Chromium's own print-to-PDF, which prints as soon as the page has loaded (as `--screenshot` shoots): the
    static page's timeline facets and views are in the PDF, drawn."""
    import subprocess

    from support.browser import CHROMIUM, CHROMIUM_ARGS

    pdf = tmp_path / "static.pdf"
    subprocess.run([CHROMIUM, *CHROMIUM_ARGS, "--no-pdf-header-footer", f"--print-to-pdf={pdf}",
                    (static_pages / "static.html").resolve().as_uri()], capture_output=True, timeout=120, check=True)
    images = pdf_images(pdf.read_bytes())
    # the timeline's two facets (MPI-IO, POSIX) and the spatiality view, each printed with its operations
    drawn = [img for img in images if img[2] > 2000]
    assert len(drawn) >= 3, images
    # the print view: no controls
    page, errors = loaded(browser, static_pages / "static.html", at_load=False)
    page.emulate_media(media="print")
    assert not page.locator("#reset").is_visible() and page.locator("#timeline canvas").is_visible()
    assert errors == []
    page.close()


def diff_colours(page) -> dict:
    return page.evaluate("""Object.fromEntries(Array.from(document.querySelectorAll('#insight-diff li.diff-item'))
        .map((li) => [li.dataset.code, [li.querySelector('.status-tag').textContent.trim(),
                                        getComputedStyle(li.querySelector('.status-tag')).color]]))""")


def test_compare_colours_what_changed_by_what_it_means(browser, tmp_path, logs_dir):
    run_iolens("compare", PAIRS / "small_indep.darshan", PAIRS / "small_coll.darshan", "-o", tmp_path / "fix.html")
    run_iolens("compare", PAIRS / "small_coll.darshan", PAIRS / "small_indep.darshan", "-o", tmp_path / "undo.html")
    page, errors = loaded(browser, tmp_path / "fix.html", at_load=False)
    fix = diff_colours(page)
    page.close()
    # the fix: its problems resolved (green), collective buffering now healthy: new, but good news (green)
    assert fix["SMALL_IO"] == ["resolved", GOOD] and fix["NO_COLLECTIVE_IO"] == ["resolved", GOOD]
    assert fix["COLLECTIVE_IO"] == ["new", GOOD]
    page, more = loaded(browser, tmp_path / "undo.html", at_load=False)
    undo = diff_colours(page)
    page.close()
    # undone: the problems are back (red), and collective buffering is lost (red)
    assert undo["SMALL_IO"] == ["new", BAD] and undo["COLLECTIVE_IO"] == ["lost", BAD]
    assert errors == [] and more == []


def test_a_workflow_page_gives_mpiio_rows_only_to_mpi_processes(browser, tmp_path, logs_dir):
    run_iolens("report", LOGS / "workflows/pipeline", "-o", tmp_path / "job.html", "-q")
    page, errors = loaded(browser, tmp_path / "job.html", at_load=False)
    page.evaluate("window.iolens.ready")
    rows = {layer: page.evaluate("(l) => window.iolens.rows(l)", layer) for layer in ("MPI-IO", "POSIX")}
    # the four MPI ranks of `simulate` call MPI-IO; `inspect` (C) and `post` (Python) do not: no row for them
    assert rows["MPI-IO"] == ["0·r0", "0·r1", "0·r2", "0·r3"]
    assert rows["POSIX"][:4] == rows["MPI-IO"] and len(rows["POSIX"]) == 6
    assert page.evaluate("window.iolens.findOp('MPI-IO', 4)") is None
    op = page.evaluate("window.iolens.findOp('MPI-IO', 3)")
    page.mouse.move(op["x"], op["y"])  # a real pointer over rank 3's row of the 4-row facet
    assert "0·r3" in page.inner_text("#tooltip") or "rank 3" in page.inner_text("#tooltip")
    shot = page.screenshot()
    assert coloured_pixels(shot, page.locator("#timeline canvas").bounding_box()) > 200
    assert errors == []
    page.close()


def test_a_job_page_brackets_a_parent_and_its_workers(browser, tmp_path, logs_dir):
    """A Python loader's logs (its spawned workers tied to it by `jobs`): the gutter says "parent" and
    "workers", as a DFTracer page says main and workers; an MPI workflow keeps the word "rank"."""
    run_iolens("report", LOGS / "dftracer/loader_gz_darshan", "-o", tmp_path / "loader.html", "-q")
    page, errors = loaded(browser, tmp_path / "loader.html", at_load=False)
    page.evaluate("window.iolens.ready")
    groups = page.evaluate("window.iolens.roleGroups('POSIX')")
    procs = {p["rank"]: p for p in page.evaluate("window.iolens.processes()")}
    assert [g["name"] for g in groups] == ["parent", "workers"]
    assert [procs[r]["role"] for r in groups[0]["ranks"]] == ["parent"]
    assert len(groups[1]["ranks"]) == 3 and all(procs[r]["role"] == "worker" for r in groups[1]["ranks"])
    assert errors == []
    page.close()
    run_iolens("report", LOGS / "workflows/pipeline", "-o", tmp_path / "job.html", "-q")
    page, errors = loaded(browser, tmp_path / "job.html", at_load=False)
    page.evaluate("window.iolens.ready")
    assert page.evaluate("window.iolens.roleGroups('POSIX')") == []  # ranks of an MPI step: no brackets
    assert errors == []
    page.close()
