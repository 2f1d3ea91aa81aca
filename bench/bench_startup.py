#!/usr/bin/env python3
"""CPU time (user + system, of the child process) of short commands on a small log: what a command costs before
and beside its work (imports), for one source tree or two side by side.

    python bench/bench_startup.py                                  # this tree (src/ beside this script)
    python bench/bench_startup.py --against /work/main/src         # and another tree, each command alternated

CPU time, not wall time: the machine is shared, and what a command loads is CPU. Best of --repeat.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS") or REPO.parent / "shared" / "logs")
LOG = "pairs/aligned.darshan"
COMMANDS = (("python", "-c", "import iolens"), ("info", "--json"), ("diagnose", "--json"), ("jobs", "--json"),
            ("report", "-q", "-o", "/dev/null"))


def cpu(tree: str, command: tuple) -> float:
    env = {**os.environ, "PYTHONPATH": tree}
    if command[0] == "python":
        args = [sys.executable, *command[1:]]
    else:
        args = [sys.executable, "-m", "iolens.cli.main", *command, str(LOGS / LOG)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, env=env, capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", help="another tree's src/ to measure beside this one")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    trees = [str(REPO / "src")] + ([args.against] if args.against else [])
    print(f"load average {os.getloadavg()[0]:.1f}; log {LOG}; CPU s, best of {args.repeat}")
    print("command".ljust(28) + "".join(t[-30:].rjust(32) for t in trees))
    for command in COMMANDS:
        best = {t: min(cpu(t, command) for _ in range(args.repeat)) for t in trees}
        name = " ".join(command if command[0] != "python" else command[1:])
        print(name[:28].ljust(28) + "".join(f"{best[t]:32.3f}" for t in trees))


if __name__ == "__main__":
    main()
