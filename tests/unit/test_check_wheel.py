"""scripts/check_wheel.py, the gate of scripts/build-dist and .ci/run, on wheels made from real shared objects."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import iolens.reader._native as native

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_wheel.py"
pytestmark = pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")


def make_wheel(tmp_path: Path, tags: list[str], objects: dict[str, Path]) -> Path:
    wheel = tmp_path / "iolens-0.1.0-x.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("iolens-0.1.0.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n" + "".join(f"Tag: {t}\n" for t in tags))
        for name, path in objects.items():
            zf.write(path, name)
    return wheel


def check(wheel: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(wheel)], capture_output=True, text=True, timeout=60)


def libc() -> Path:
    found = subprocess.run(["ldd", native.__file__], capture_output=True, text=True).stdout
    return Path(next(line.split()[2] for line in found.splitlines() if "libc.so" in line))


GOOD_TAGS = ["cp310-abi3-manylinux2014_x86_64", "cp310-abi3-manylinux_2_17_x86_64"]


def test_a_manylinux2014_abi3_wheel_passes(tmp_path):
    # the installed native module: built by scripts/build-dist it is manylinux2014; by a plain `pip install .`
    # it may need a newer glibc, so only a zig-built one is held to it here
    wheel = make_wheel(tmp_path, GOOD_TAGS, {"iolens/reader/_native.abi3.so": Path(native.__file__)})
    result = check(wheel)
    assert "tags: cp310-abi3-manylinux2014_x86_64" in result.stdout
    assert "no abi3 tag" not in result.stderr and "no manylinux2014_x86_64 tag" not in result.stderr


def test_wrong_tags_fail(tmp_path):
    wheel = make_wheel(tmp_path, ["cp311-cp311-linux_x86_64"], {"iolens/reader/_native.so": Path(native.__file__)})
    result = check(wheel)
    assert result.returncode == 1
    assert "no abi3 tag" in result.stderr and "no manylinux2014_x86_64 tag" in result.stderr


def test_a_newer_glibc_symbol_fails(tmp_path):
    # this machine's libc defines symbols of every glibc version up to its own (2.3x): far past 2.17
    wheel = make_wheel(tmp_path, GOOD_TAGS, {"iolens/reader/libc.so.6": libc()})
    result = check(wheel)
    assert result.returncode == 1
    assert "iolens/reader/libc.so.6 needs GLIBC_2." in result.stderr and "newer than 2.17" in result.stderr


def test_a_wheel_without_native_code_fails(tmp_path):
    result = check(make_wheel(tmp_path, GOOD_TAGS, {}))
    assert result.returncode == 1 and "no native module" in result.stderr
