"""Fixtures of the install tests: a fresh virtual environment with the core of iolens alone."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from support.corpus import REPO


def tree_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory):
    """A fresh virtual environment with iolens and nothing of its extras: its bin/ and the MB the install added."""
    wheel = os.environ.get("IOLENS_WHEEL")
    if not wheel and shutil.which("cargo") is None:
        msg = "no IOLENS_WHEEL and no cargo to build iolens from this checkout"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    venv = tmp_path_factory.mktemp("core") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([py, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True, timeout=600)
    fresh = tree_mb(site_packages(venv))
    target = wheel or str(REPO)
    r = subprocess.run([py, "-m", "pip", "install", "-q", target], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    return SimpleNamespace(bin=venv / "bin", added_mb=tree_mb(site_packages(venv)) - fresh)


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))
