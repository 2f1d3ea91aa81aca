"""How heavy is an install? iolens's core (no extras), iolens with every extra, PyDarshan and Drishti, each into a
fresh virtual environment: the size of its site-packages, the packages it brings, and the time pip took.

    python bench/bench_install.py [--wheel dist/iolens-*.whl] [--only NAME ...] [--json out.json]

iolens is installed from --wheel when given (what a user gets: no compiler), else from this checkout (pip builds
the native extension with cargo, so the time includes the Rust build). pip's cache is not disabled: a package
already downloaded is not downloaded again (the sizes do not depend on it, the times do). Prints a Markdown table
for BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASE = {"pip", "setuptools", "wheel"}  # what every fresh venv has: not counted


def installs(target: str) -> dict:
    """name -> pip arguments."""
    return {
        "iolens (core)": [target],
        # what `pip install iolens` brought before the extras (its dependencies then: fleet's and tune's)
        "iolens[fleet,tune]": [f"{target}[fleet,tune]"],
        "iolens[all]": [f"{target}[all]"],
        "PyDarshan (darshan)": ["darshan"],
        "Drishti (drishti-io)": ["drishti-io"],
    }


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def tree_bytes(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                total += os.lstat(p).st_size
    return total


def measure(name: str, args: list, work: Path) -> dict:
    venv = work / "".join(c if c.isalnum() else "_" for c in name)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    before = tree_bytes(site_packages(venv))
    began = time.perf_counter()
    r = subprocess.run([py, "-m", "pip", "install", "-q", *args], capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if r.returncode != 0:
        return {"name": name, "error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "pip failed"}
    listed = json.loads(subprocess.run([py, "-m", "pip", "list", "--format", "json"], capture_output=True, text=True,
                                       check=True).stdout)
    packages = sorted(p["name"].lower() for p in listed if p["name"].lower() not in BASE)
    size = tree_bytes(site_packages(venv)) - before
    largest = sorted(((tree_bytes(d), d.name) for d in site_packages(venv).iterdir() if d.is_dir()
                      and not d.name.endswith((".dist-info", "__pycache__")) and d.name not in BASE | {"_distutils_hack",
                                                                                              "pkg_resources"}),
                     reverse=True)[:5]
    return {"name": name, "args": args, "mb": size / 1e6, "packages": len(packages), "seconds": seconds,
            "largest": [(n, round(b / 1e6, 1)) for b, n in largest], "names": packages}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", help="install iolens from this wheel (default: from this checkout)")
    ap.add_argument("--only", nargs="*", help="only these installs (names as printed)")
    ap.add_argument("--json", help="write the figures here too")
    a = ap.parse_args()
    target = str(Path(a.wheel).resolve()) if a.wheel else str(REPO)
    todo = {k: v for k, v in installs(target).items() if not a.only or k in a.only}
    rows = []
    with tempfile.TemporaryDirectory(prefix="iolens-bench-install-") as tmp:
        for name, args in todo.items():
            print(f"installing {name} ...", file=sys.stderr, flush=True)
            rows.append(measure(name, args, Path(tmp)))
            print(f"  {rows[-1]}", file=sys.stderr, flush=True)
    load = os.getloadavg()
    print(f"\niolens from {'the wheel ' + Path(target).name if a.wheel else 'this checkout (built with cargo)'}; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores\n")
    print("| install | site-packages | packages | pip time | largest |")
    print("| --- | ---: | ---: | ---: | --- |")
    for r in rows:
        if "error" in r:
            print(f"| {r['name']} | failed: {r['error']} | | | |")
            continue
        largest = ", ".join(f"{n} {mb:.0f} MB" for n, mb in r["largest"][:3])
        print(f"| {r['name']} | {r['mb']:.0f} MB | {r['packages']} | {r['seconds']:.0f} s | {largest} |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
