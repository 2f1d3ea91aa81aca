"""`python -m iolens.analysis.diagnosis.findings --docs [DIR]`: write the tables made from the registry into
DIR/diagnosis.md and DIR/fleet.md (default: the checkout's docs/); `--check`: only say whether they are up to
date, exit status 1 when not."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ....output import write_text
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
            write_text(path, new, mode=path.stat().st_mode & 0o7777)
        print(f"{path}: {'up to date' if new == text else 'out of date' if args.check else 'written'}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
