"""`python -m iolens.analysis.diagnosis.findings --docs [DIR]`: write the tables made from the registry into
DIR/diagnosis.md and DIR/fleet.md (default: the checkout's docs/); `--check`: only say whether they are up to
date, exit status 1 when not."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from ._catalogue import BLOCKS, DOCS, generated


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m iolens.analysis.diagnosis.findings", description=__doc__)
    ap.add_argument("--docs", action="store_true", required=True, help="the generated tables of the docs")
    ap.add_argument("--check", action="store_true", help="do not write: exit 1 when a file is out of date")
    ap.add_argument("folder", nargs="?", type=Path, default=DOCS)
    args = ap.parse_args(argv)
    stale = 0
    for name, blocks in BLOCKS.items():
        path = args.folder / name
        text = path.read_text()
        new = generated(text, blocks)
        stale += new != text
        if new != text and not args.check:
            _replace(path, new)
        print(f"{path}: {'up to date' if new == text else 'out of date' if args.check else 'written'}")
    return 1 if args.check and stale else 0


def _replace(path: Path, text: str) -> None:
    """Write `text` to a temporary name, then the final one: a killed run leaves the file whole."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(tmp, path.stat().st_mode)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
