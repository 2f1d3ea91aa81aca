"""The README's first screen, as a newcomer and `.ci/run` read it: its first fenced block is the install and the
test command (.ci/run runs those two lines as written), and what a fresh machine needs comes before them, with
the Debian packages .ci/run installs in one `apt-get install` line."""
from __future__ import annotations

import re

from support.corpus import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
CI = (REPO / ".ci" / "run").read_text(encoding="utf-8")


def first_block() -> tuple:
    """(text before the first fenced block, that block's language, its lines)."""
    m = re.search(r"^```(\w*)\n(.*?)\n```$", README, re.M | re.S)
    return README[:m.start()], m.group(1), m.group(2).splitlines()


def test_the_first_block_is_the_install_and_the_test_command():
    before, lang, lines = first_block()
    assert lang == "bash" and len(lines) == 2
    install, tests = lines
    assert install.startswith("pip install") and "[test]" in install
    assert tests.startswith("python -m pytest") and '-m "not slow"' in tests
    assert "awk '/^```bash$/" in CI  # .ci/run reads the first bash block: this one


def test_what_a_fresh_machine_needs_comes_first():
    before, _, _ = first_block()
    assert "Python ≥ 3.10" in before and "cargo" in before and "IOLENS_LOGS" in before
    apt = re.search(r"`apt-get install -y ([^`]+)`", before)
    assert apt, "no apt-get line before the two commands"
    wanted = set(apt.group(1).split())
    installed = set(" ".join(re.findall(r"apt-get install -y -qq ([^>]+)>", CI.replace("\\\n", " "))).split())
    assert {"chromium", "mpich", "libnetcdf-dev"} <= installed  # (the pattern still finds .ci/run's lines)
    assert installed <= wanted, installed - wanted  # every package CI installs is on the newcomer's line


def test_the_times_and_the_quick_subsets_are_said():
    after = README[README.index('python -m pytest -m "not slow"'):][:3000]
    assert "2-core machine" in after and "python -m pytest tests/unit" in after and "-m smoke" in after
    assert not re.search(r"__\w+_(TIME|MB)__", README)  # every measured figure filled in
