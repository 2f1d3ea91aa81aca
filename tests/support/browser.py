"""Helpers for the report's browser tests: Chromium via Playwright, page loading, and hostile logs.

Debian's chromium is used through `executable_path`; `playwright install` is never needed.
"""
from __future__ import annotations

import struct
import time
import zlib
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
HEADER_SIZE = 1328  # log format 3.41


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


class LoadedPage:
    """A report opened in a fresh page, with every console error and uncaught exception collected."""

    def __init__(self, browser, html: Path, viewport=(1500, 1000)):
        self.errors = []
        self.page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        began = time.perf_counter()
        self.page.goto(Path(html).resolve().as_uri())
        self.page.evaluate("window.iolens.ready")
        self.load_seconds = time.perf_counter() - began

    def settle(self) -> None:
        """Wait until the page has drawn what the last interaction asked for (next frame, then the point views)."""
        self.page.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 80)))")

    def state(self) -> dict:
        return self.page.evaluate("window.iolens.state()")

    def wheel(self, box: dict, x_share: float, y: float, notches: int) -> None:
        """A real mouse: `notches` wheel turns towards zooming in at x_share of `box`'s width, y px from its
        top, then wait for the drawing."""
        self.page.mouse.move(box["x"] + box["width"] * x_share, box["y"] + y)
        for _ in range(notches):
            self.page.mouse.wheel(0, -300)
        self.settle()

    def js(self, expr: str, *args):
        return self.page.evaluate(expr, *args)

    def close(self):
        self.page.close()


def coloured_pixels(png: bytes, box: dict) -> int:
    """Pixels of a screenshot inside `box` drawn in a saturated colour (the operations' orange and blue, the spans'
    colours; the panels' background, grid and phase bands are white, grey or pale)."""
    from io import BytesIO

    from PIL import Image

    im = Image.open(BytesIO(png)).convert("RGB").crop((int(box["x"]), int(box["y"]), int(box["x"] + box["width"]),
                                                       int(box["y"] + box["height"])))
    return sum(1 for r, g, b in im.get_flattened_data() if max(r, g, b) - min(r, g, b) > 80)


# --- hostile logs --------------------------------------------------------------------------------

def _inflate_all(buf: bytes) -> bytes:
    """A region is one or more zlib streams back to back."""
    out, rest = [], buf
    while rest:
        d = zlib.decompressobj()
        out.append(d.decompress(rest))
        rest = d.unused_data
        if not d.eof:
            break
    return b"".join(out)


def _names(raw: bytes) -> list:
    names, pos = [], 0
    while pos + 8 < len(raw):
        rec_id = raw[pos:pos + 8]
        end = raw.index(b"\0", pos + 8)
        names.append((rec_id, raw[pos + 8:end]))
        pos = end + 1
    return names


def rewrite_log(src: Path, dst: Path, *, exe: str | None = None, rename: dict | None = None) -> None:
    """Copy a little-endian 3.41 log, replacing the command line and renaming files (old name -> new).

    The job and name regions are inflated, edited, deflated again, and every module region after them is
    moved by the change in size (header maps updated)."""
    data = Path(src).read_bytes()
    assert data[:4] == b"3.41" and struct.unpack_from("<q", data, 8)[0] == 6567223, "needs a 3.41 LE log"
    name_off, name_len = struct.unpack_from("<QQ", data, 32)
    job = _inflate_all(data[HEADER_SIZE:name_off])
    struct_size = 1080
    text = job[struct_size:].split(b"\0", 1)[0]
    first, sep, mounts = text.partition(b"\n")
    if exe is not None:
        first = exe.encode()
    new_job = job[:struct_size] + first + sep + mounts + b"\0"
    names = _names(_inflate_all(data[name_off:name_off + name_len]))
    rename = {k.encode(): v.encode() for k, v in (rename or {}).items()}
    new_names = b"".join(rid + rename.get(n, n) + b"\0" for rid, n in names)
    job_c, names_c = zlib.compress(new_job), zlib.compress(new_names)
    delta = (HEADER_SIZE + len(job_c) + len(names_c)) - (name_off + name_len)
    header = bytearray(data[:HEADER_SIZE])
    struct.pack_into("<QQ", header, 32, HEADER_SIZE + len(job_c), len(names_c))
    for i in range(64):
        off, length = struct.unpack_from("<QQ", header, 48 + 16 * i)
        if length:
            struct.pack_into("<QQ", header, 48 + 16 * i, off + delta, length)
    Path(dst).write_bytes(bytes(header) + job_c + names_c + data[name_off + name_len:])


HOSTILE_EXE = "<img src=x onerror=window.__xss=2><script>window.__xss=3</script> --run"
HOSTILE_FILE = "/tmp/<img src=x onerror=window.__xss=1>.dat"
HOSTILE_NAME = "<img src=x onerror=window.__xss=1>"  # a log named so


def write_hostile_log(logs_dir: Path, dst: Path) -> Path:
    """collective_2phase with a command line and a file name that would run script if put into HTML."""
    rewrite_log(logs_dir / "generated/collective_2phase.darshan", dst, exe=HOSTILE_EXE,
                rename={"/tmp/ioscratch/collective_2phase.dat": HOSTILE_FILE})
    return dst


class OfflineContext:
    """What LoadedPage needs of a browser (new_page with a viewport), offline, and every URL it asked for."""

    def __init__(self, ctx):
        self.ctx, self.requests = ctx, []
        ctx.on("request", lambda r: self.requests.append(r.url))

    def new_page(self, viewport):
        page = self.ctx.new_page()
        page.set_viewport_size(viewport)
        return page
