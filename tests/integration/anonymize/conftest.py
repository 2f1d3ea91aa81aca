"""Fixtures of the anonymize tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from iolens.reader.anonymize import Key, Tokens, write_anonymized

ORACLE_KEY = Key(b"iolens anonymize oracle test key")  # test_oracle.py's KEY


class Anonymizer:
    """Each log anonymised once per session (one key), into a folder of its own under its anonymised name."""

    def __init__(self, root: Path):
        self.root, self.tokens, self.done = root, Tokens(ORACLE_KEY), {}

    def __call__(self, path: Path):
        if path not in self.done:
            folder = self.root / str(len(self.done))
            folder.mkdir()
            report = write_anonymized(path, folder, self.tokens)
            self.done[path] = (Path(report.output), report)
        return self.done[path]


@pytest.fixture(scope="session")
def anonymized(tmp_path_factory, logs_dir):
    """path -> (the anonymised copy, its report), each shared log anonymised once per session."""
    return Anonymizer(tmp_path_factory.mktemp("anonymized"))
