"""NOT a real application: the stand-in `iolens tune` tests tune. Its I/O time depends on its knobs.

    python tune_app.py CONFIG.json [--chunk N]

It reads its knobs as a real MPI program would get them: ROMIO hints from the file ROMIO_HINTS names,
environment variables, and its own arguments (a `{CHUNK}` placeholder of tune's command). CONFIG says
what they cost: `base` seconds of I/O, times `factor` for each rule {knob, value, factor} that matches
(`romio.cb_nodes`, `env.NAME`, `arg.chunk`), or a failure {knob, value, fail: exit|nolog|hang}.

It does real I/O (writes 1 MiB in chunks to a scratch file) and waits out the rest of what its knobs
cost, measures the whole as its I/O time, and leaves a real Darshan-format log saying so: the shared log
CONFIG names, with every time counter and DXT time scaled so that the slowest rank's I/O time is what it
measured. The test stand-in of libdarshan.so (tests/support/darshan_stand_in.py) copies it where Darshan would write, at
exit, from IOLENS_TEST_LOG. Standard library and tests/support/logtools.py, tests/support/dxt_writer.py only.
"""
from __future__ import annotations

import json
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: tests/ holds the support package

from support.dxt_writer import dxt_records, set_dxt_records  # noqa: E402
from support.logtools import read_parts, write_parts  # noqa: E402


def knobs(argv: list) -> dict:
    out = {}
    hints = os.environ.get("ROMIO_HINTS")
    if hints and Path(hints).is_file():
        for line in Path(hints).read_text().splitlines():
            key, _, value = line.strip().partition(" ")
            if key:
                out[f"romio.{key}"] = value.strip()
    for key, value in os.environ.items():
        out[f"env.{key}"] = value
    if "--chunk" in argv:
        out["arg.chunk"] = argv[argv.index("--chunk") + 1]
    return out


def cost(config: dict, set_knobs: dict) -> tuple:
    """(seconds of I/O these knobs cost, failure or None)."""
    seconds = config["base"]
    for rule in config.get("rules", []):
        if set_knobs.get(rule["knob"]) == str(rule["value"]):
            if "fail" in rule:
                return seconds, rule["fail"]
            seconds *= rule["factor"]
    return seconds, None


def scale_log(config: dict, k: float, dst: Path) -> None:
    """The template log with every time scaled by k: time counters, timestamps, DXT times, the job's end."""
    parts = read_parts(config["template"])
    for module, (n_counters, f_names) in config["layout"].items():
        data = parts.module(module)
        if data is None:
            continue
        rec = struct.Struct(f"{parts.byte_order}Qq{n_counters}q{len(f_names)}d")
        out = bytearray()
        for pos in range(0, len(data) - rec.size + 1, rec.size):
            vals = list(rec.unpack_from(data, pos))
            for i, name in enumerate(f_names):
                j = 2 + n_counters + i
                if name.endswith("_TIME") or name.endswith("_TIMESTAMP"):
                    vals[j] *= k
                elif "VARIANCE" in name and "TIME" in name:
                    vals[j] *= k * k
            out += rec.pack(*vals)
        parts.set_module(module, bytes(out))
    for module in ("DXT_POSIX", "DXT_MPIIO"):
        if parts.module(module) is None:
            continue
        recs = dxt_records(parts, module)
        for r in recs:
            r.writes = [s._replace(start=s.start * k, end=s.end * k) for s in r.writes]
            r.reads = [s._replace(start=s.start * k, end=s.end * k) for s in r.reads]
        set_dxt_records(parts, module, recs)
    job = bytearray(parts.job)
    bo = parts.byte_order
    (s0, n0), (s1, n1) = struct.unpack_from(bo + "qq", job, 8), struct.unpack_from(bo + "qq", job, 24)
    end = s0 + n0 / 1e9 + k * ((s1 + n1 / 1e9) - (s0 + n0 / 1e9))
    struct.pack_into(bo + "qq", job, 24, int(end), int(round((end - int(end)) * 1e9)))
    parts.job = bytes(job)
    write_parts(parts, dst)


def main(argv: list) -> int:
    config = json.loads(Path(argv[1]).read_text())
    set_knobs = knobs(argv)
    seconds, failure = cost(config, set_knobs)
    chunk = int(set_knobs.get("arg.chunk", 65536))
    began = time.perf_counter()
    with tempfile.TemporaryFile() as scratch:  # the real part of the I/O
        block = b"x" * chunk
        for _ in range(max(1, (1 << 20) // chunk)):
            scratch.write(block)
        scratch.flush()
        os.fsync(scratch.fileno())
    if failure == "hang":
        time.sleep(600)
    left = seconds - (time.perf_counter() - began)
    if left > 0:
        time.sleep(left)  # what the file system would take under these knobs
    measured = time.perf_counter() - began
    if failure == "exit":
        print("tune_app: failing as asked", file=sys.stderr)
        return 3
    if failure == "nolog":
        os._exit(0)  # no exit handlers: Darshan (here its stand-in) writes no log
    log = Path(tempfile.mkdtemp(prefix="tune-app-", dir=config.get("scratch"))) / "run.darshan"
    scale_log(config, measured / config["template_io"], log)
    os.environ["IOLENS_TEST_LOG"] = str(log)  # read by the stand-in libdarshan.so at exit
    print(f"tune_app: {measured:.6f} s of I/O")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
