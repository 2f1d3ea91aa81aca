"""The stand-in of Darshan's runtime the `iolens run` / `tune` / knob tests preload (Darshan's runtime cannot be
installed here: no registry has it), and `iolens run` as those tests call it.

It plays Darshan's part at the edges only: it traces nothing; at exit it reads the variables `run` sets and
copies one of the shared *real* logs (IOLENS_TEST_LOG) to where Darshan would write, under a Darshan-style name.
integration/run/conftest.py builds it once per session (the `stand_in` fixture).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .corpus import LOGS

STAND_IN = r"""
/* NOT Darshan: a test stand-in that traces nothing. At process exit it copies the real log named by
   IOLENS_TEST_LOG into the directory Darshan would write to, as Darshan does: a .darshan_partial
   file renamed when complete, and only for a non-MPI program if DARSHAN_ENABLE_NONMPI is set.
   IOLENS_TEST_PARTIAL leaves it under the partial name, as Darshan does with a log it could not finish;
   IOLENS_TEST_LOG_BYTES=N copies only the first N bytes (a write cut short). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((destructor)) static void write_log_at_exit(void) {
    const char *dir = getenv("DARSHAN_LOG_DIR_PATH"), *src = getenv("IOLENS_TEST_LOG");
    if (!dir || !src || !getenv("DARSHAN_ENABLE_NONMPI")) return;
    char part[4096], done[4096];
    snprintf(done, sizeof done, "%s/tester_prog_id0-%d_11-23-4321-1234567890123456789.darshan", dir, (int)getpid());
    snprintf(part, sizeof part, "%s_partial", done);
    FILE *in = fopen(src, "rb"), *out = fopen(part, "wb");
    if (!in || !out) return;
    char buf[65536];
    size_t n;
    long left = getenv("IOLENS_TEST_LOG_BYTES") ? atol(getenv("IOLENS_TEST_LOG_BYTES")) : -1;
    while (left != 0 && (n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (left > 0 && (long)n > left) n = (size_t)left;
        fwrite(buf, 1, n, out);
        if (left > 0) left -= (long)n;
    }
    fclose(in);
    fclose(out);
    if (!getenv("IOLENS_TEST_PARTIAL")) rename(part, done);
}
"""
SOURCE_LOG = LOGS / "generated" / "collective_2phase.darshan"


def build_stand_in(folder: Path) -> Path | None:
    """Compile the stand-in libdarshan.so into FOLDER with the system C compiler (None: there is none)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    (folder / "standin.c").write_text(STAND_IN)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(folder / "libdarshan.so"), str(folder / "standin.c")], check=True)
    return folder / "libdarshan.so"


def iolens_run(*args, env=None, cwd=None, input=None):
    return subprocess.run([sys.executable, "-m", "iolens.cli.main", "run", *map(str, args)], capture_output=True,
                          text=True, timeout=120, cwd=cwd, input=input, env={**os.environ, **(env or {})})
