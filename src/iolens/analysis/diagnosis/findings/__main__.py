"""`python -m iolens.analysis.diagnosis.findings --docs [FILE]`: write the generated tables into docs/diagnosis.md
(`--check`: only say whether they are up to date, exit status 1 when not)."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from ._catalogue import DOCS, generated


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m iolens.analysis.diagnosis.findings", description=__doc__)
    ap.add_argument("--docs", action="store_true", required=True, help="the generated tables of docs/diagnosis.md")
    ap.add_argument("--check", action="store_true", help="do not write: exit 1 when the file is out of date")
    ap.add_argument("file", nargs="?", type=Path, default=DOCS)
    args = ap.parse_args(argv)
    text = args.file.read_text()
    new = generated(text)
    if args.check:
        print(f"{args.file}: {'up to date' if new == text else 'out of date'}")
        return 0 if new == text else 1
    if new != text:  # a temporary name, then the final one: a killed run leaves the file whole
        fd, tmp = tempfile.mkstemp(dir=args.file.parent, prefix=f".{args.file.name}.")
        with os.fdopen(fd, "w") as out:
            out.write(new)
        os.chmod(tmp, args.file.stat().st_mode)
        os.replace(tmp, args.file)
    print(f"{args.file}: {'written' if new != text else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
