"""CONTRIBUTING.md stays true to the code: every repository path it writes in backticks exists, its layer table is
tests/unit/test_layers.py's ORDER, and the tests, commits, finding codes and subcommands it names are real.

The guide names finding codes and subcommands only as examples (the registry and cli/main.py's SUBCOMMANDS are
the lists), so each one it names must exist; it does not claim to list them all."""
from __future__ import annotations

import ast
import re
import shutil
import subprocess

import pytest

from iolens.analysis.diagnosis import CODES
from iolens.cli.main import SUBCOMMANDS

from support.corpus import REPO

GUIDE = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
FENCED = re.compile(r"^ *```\w*\n(.*?)^ *```$", re.M | re.S)
SPAN = re.compile(r"`([^`]+)`")  # a span may go on over a line break
TOP = {p.name for p in REPO.iterdir()} - {".git"}
# what a file of the repository is named with, when the guide writes it with a folder
SOURCE_SUFFIXES = (".py", ".md", ".toml", ".j2", ".js", ".css", ".rs", ".c", ".sh", ".tsv", ".json")


def code_words() -> list:
    """Every whitespace-separated word of the guide's code: inline spans and fenced blocks."""
    prose = FENCED.sub("", GUIDE)
    texts = SPAN.findall(prose) + FENCED.findall(GUIDE)
    return [w.strip("\"'(),;:") for text in texts for w in text.split()]


def repository_paths(words) -> list:
    """The words that name a path of the repository: their first part is a top-level entry (`src/...`,
    `tests/...`, `README.md`)."""
    return sorted({w for w in words if w.split("/")[0] in TOP and (w in TOP or "/" in w)})


def exists(path: str) -> bool:
    """The path exists; in a path with a placeholder (`findings/<code>.py`, `terminal*.py`), the folder before
    it exists and, for a wildcard, something matches."""
    if "<" in path:
        return (REPO / path[:path.index("<")]).parent.is_dir()
    if "*" in path:
        return any(REPO.glob(path))
    return (REPO / path.split("::")[0]).exists()


def test_the_guide_names_paths():
    paths = repository_paths(code_words())
    assert len(paths) > 50 and "src/iolens/cli/main.py" in paths and "tests/unit/test_layers.py" in paths


def test_every_repository_path_exists():
    missing = [p for p in repository_paths(code_words()) if not exists(p)]
    assert not missing, f"CONTRIBUTING.md names paths that do not exist: {missing}"


def test_paths_are_written_from_the_repository_root():
    # `views/static/app.js` could be checked by no one: write `src/iolens/views/static/app.js`
    short = sorted({w for w in code_words() if "/" in w and w.split("/")[0] not in TOP
                    and not w.startswith(("/", "$", "..", "-", "http")) and w.endswith((*SOURCE_SUFFIXES, "/"))})
    assert not short, f"write these from the repository root: {short}"


def test_the_bare_file_names_exist_somewhere():
    # `_advice.py`, `conftest.py`, `pyproject.toml`: a file of that name is in the repository
    names = {w for w in code_words() if "/" not in w and "<" not in w and re.fullmatch(r"[\w.-]+", w)
             and w.endswith(SOURCE_SUFFIXES)}
    have = {p.name for p in (*REPO.glob("*"), *REPO.glob("src/**/*"), *REPO.glob("tests/**/*"),
                             *REPO.glob("bench/**/*"), *REPO.glob("docs/*"), *REPO.glob("native/**/*"))}
    assert names and not sorted(names - have), sorted(names - have)


def test_the_tests_it_names_exist():
    named = {w for w in code_words() if re.fullmatch(r"test_\w+", w)}
    defined = {node.name for path in (REPO / "tests").rglob("test_*.py")
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.FunctionDef)}
    assert named and not sorted(named - defined), sorted(named - defined)


def _layers_table() -> dict:
    """ORDER, PREFIXES and EDGE of tests/unit/test_layers.py, read from its source (a test imports no test)."""
    tree = ast.parse((REPO / "tests/unit/test_layers.py").read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(node, ast.Assign)
                                                                       else None)
        if isinstance(target, ast.Name) and target.id in ("ORDER", "PREFIXES", "EDGE"):
            found[target.id] = ast.literal_eval(node.value)
    return found


def _layer_of(path: str, prefixes: dict) -> str | None:
    """The layer (as test_layers.layer_of says) of a path under src/iolens/, None elsewhere."""
    if not path.startswith("src/iolens/"):
        return None
    module = path[len("src/iolens/"):].rstrip("/").removesuffix(".py").replace("/", ".")
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in prefixes:
            return prefixes[".".join(parts[:n])]
    return None


def test_the_layer_table_is_the_order_the_layer_test_checks():
    table = _layers_table()
    layers = [layer for rank in table["ORDER"] for layer in rank] + list(table["EDGE"])
    prefixes = {p: layer for layer in layers for p in table["PREFIXES"].get(layer, (layer,))}
    section = GUIDE[GUIDE.index("## The shape"):GUIDE.index("## Tests")]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    drawn = []  # the layers of each row, bottom to top
    for row in rows:
        folders = row.split(" | ")[1]
        drawn.append(tuple(sorted({_layer_of(p, prefixes) for p in SPAN.findall(folders)} - {None})))
    assert drawn == [tuple(sorted(rank)) for rank in reversed(table["ORDER"])], \
        "CONTRIBUTING.md's layer table ('The shape') must draw tests/unit/test_layers.py's ORDER, bottom to top"
    start = section.index("At the edge")
    edge = section[start:section.index("\n\n", start)]
    assert all(_layer_of(p, prefixes) in table["EDGE"] for p in SPAN.findall(edge) if p.startswith("src/iolens/")
               and p != "src/iolens/__init__.py")
    assert {_layer_of(p, prefixes) for p in SPAN.findall(edge)} >= set(table["EDGE"])


def test_the_finding_codes_it_names_are_findings():
    # a finding code in the prose (FSYNC_HEAVY), and the code of the example declaration
    prose = SPAN.sub("", FENCED.sub("", GUIDE))
    named = set(re.findall(r"\b[A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+\b", prose))
    named |= set(re.findall(r'CODE = "(\w+)"', GUIDE))
    assert "FSYNC_HEAVY" in named and not sorted(named - set(CODES)), sorted(named - set(CODES))


def test_the_subcommands_it_names_are_subcommands():
    code = SPAN.findall(FENCED.sub("", GUIDE)) + FENCED.findall(GUIDE)
    named = {m for text in code for m in re.findall(r"\biolens (\w+)", text)}
    assert {"run", "tune", "anonymize"} <= named and not sorted(named - set(SUBCOMMANDS)), \
        sorted(named - set(SUBCOMMANDS))


def test_the_example_commits_are_in_the_history():
    commits = set(re.findall(r"\bcommits? ([0-9a-f]{7,40})\b", GUIDE)) | set(re.findall(r"\band ([0-9a-f]{7})\b",
                                                                                            GUIDE))
    assert len(commits) >= 7
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("no git history here (an unpacked sdist)")
    if subprocess.run(["git", "-C", str(REPO), "rev-parse", "--is-shallow-repository"], capture_output=True,
                      text=True).stdout.strip() == "true":
        pytest.skip("a shallow clone holds no history")
    missing = [c for c in sorted(commits) if subprocess.run(
        ["git", "-C", str(REPO), "cat-file", "-e", f"{c}^{{commit}}"], capture_output=True).returncode != 0]
    assert not missing, f"CONTRIBUTING.md names commits that are not in the history: {missing}"
