"""Check a built wheel serves what its name promises: the stable ABI (abi3) and manylinux2014, i.e. no native
code in it needs a glibc symbol newer than 2.17 (auditwheel's rule, checked with objdump's dynamic symbols).

Usage: python scripts/check_wheel.py WHEEL   (exit 1 with the reasons when it does not)
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

MAX_GLIBC = (2, 17)
WANTED_TAGS = ("abi3", "manylinux2014_x86_64")


def wheel_tags(zf: zipfile.ZipFile) -> list[str]:
    wheel_file = next(n for n in zf.namelist() if n.endswith(".dist-info/WHEEL"))
    return [line.split(":", 1)[1].strip() for line in zf.read(wheel_file).decode().splitlines()
            if line.startswith("Tag:")]


def glibc_versions(shared_object: Path) -> set[tuple[int, ...]]:
    symbols = subprocess.run(["objdump", "-T", str(shared_object)], check=True, capture_output=True, text=True)
    return {tuple(int(p) for p in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)\b", symbols.stdout)}


def problems(wheel: Path) -> list[str]:
    found = []
    with zipfile.ZipFile(wheel) as zf, tempfile.TemporaryDirectory() as tmp:
        tags = wheel_tags(zf)
        for wanted in WANTED_TAGS:
            if not any(wanted in tag.split("-") for tag in tags):
                found.append(f"no {wanted} tag (tags: {', '.join(tags)})")
        objects = [n for n in zf.namelist() if re.search(r"\.so(\.|$)", n)]
        if not objects:
            found.append("no native module in the wheel")
        for name in objects:
            newest = max(glibc_versions(Path(zf.extract(name, tmp))), default=())
            if newest > MAX_GLIBC:
                found.append(f"{name} needs GLIBC_{'.'.join(map(str, newest))}, newer than 2.17")
            print(f"{name}: newest glibc symbol {'.'.join(map(str, newest)) or 'none'}")
        print(f"tags: {', '.join(tags)}")
    return found


def main() -> int:
    wheel = Path(sys.argv[1])
    found = problems(wheel)
    for problem in found:
        print(f"check_wheel: {wheel.name}: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
