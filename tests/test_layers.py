"""Import layering of src/iolens, read from the source (ast), not by importing it.

Data flows one way: each layer imports only itself and the layers below it, no module imports the package
root (`iolens/__init__.py` is the face for users), and no module imports another layer's private name.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = "iolens"

# Layers, top to bottom. A layer may import itself and the layers of any rank below its own; layers of one rank
# may not import each other. A layer's modules are those under its prefixes (its own name unless PREFIXES says
# otherwise); a module belongs to the layer with the longest prefix naming it. Packages that do not exist yet are
# simply listed. What the code showed when this was written:
#   cli imports every layer; views/html/fleet.py reads fleet/store.py, so views sits above fleet;
#   analysis/{compare,fleet,runs,run_config}.py build on the diagnosis, which builds on the other analyses.
ORDER: list[tuple[str, ...]] = [
    ("cli", "mcp"),  # the two faces: the command line and the MCP server for agents (iolens mcp)
    ("pipeline",),  # what the faces open and judge (pipeline/sources.py: the targets of iolens sql and mcp)
    ("views",),
    ("fleet", "tune"),
    ("jobs",),
    ("analysis.runs",),
    ("analysis.diagnosis",),
    ("analysis",),
    ("analysis.measures",),
    ("model",),
    ("reader",),  # with its native module, reader._native (compiled: imports nothing of iolens)
    ("errors", "version"),
]
PREFIXES = {
    "analysis.runs": ("analysis.compare", "analysis.fleet", "analysis.runs", "analysis.run_config"),
    # the trace as numpy columns and its groupings sit beside the measures, which read the trace through them
    "analysis.measures": ("analysis.measures", "analysis.segments"),
}
# At the edge, beside the format: processes and environments, and the optional dependencies' one importer. Any
# layer may use them; they import only these.
EDGE = ("collect", "knobs", "optional")
EDGE_IMPORTS = EDGE + ("errors", "version")

# Imports of another layer's private name that exist today, each to be removed by the work named beside it.
# The test fails when an entry is no longer needed, so this list only shrinks.
PRIVATE_ALLOWED: set[tuple[str, str]] = set()  # emptied by issue 19 (the measures layer)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the module imported (a package's __init__ when a name is taken from it)
    name: str  # the name taken from the target ("" for `import x`)
    line: int


def _module_files() -> dict[str, Path]:
    files = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


MODULES = _module_files()
NATIVE = f"{ROOT}.reader._native"  # built by maturin, no source file here


def _is_module(name: str) -> bool:
    return name in MODULES or name == NATIVE or (SRC / Path(*name.split("."))).is_dir()


def imports_of(module: str, path: Path) -> list[Import]:
    """Every import of iolens in a module, at any depth (lazy imports in functions too), relative ones resolved."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [Import(module, a.name, "", node.lineno) for a in node.names if a.name.split(".")[0] == ROOT]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != ROOT:
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                if _is_module(sub):  # `from pkg import submodule`
                    found.append(Import(module, sub, "", node.lineno))
                else:
                    found.append(Import(module, source, alias.name, node.lineno))
    return found


ALL_IMPORTS = [imp for module, path in MODULES.items() for imp in imports_of(module, path)]

LAYERS = [layer for rank in ORDER for layer in rank] + list(EDGE)
RANK = {layer: i for i, rank in enumerate(ORDER) for layer in rank}
LAYER_OF_PREFIX = {prefix: layer for layer in LAYERS for prefix in PREFIXES.get(layer, (layer,))}


def layer_of(module: str) -> str:
    """The layer of the longest prefix naming the module ('' for the package root)."""
    rest = module.split(".")[1:]
    for n in range(len(rest), 0, -1):
        if ".".join(rest[:n]) in LAYER_OF_PREFIX:
            return LAYER_OF_PREFIX[".".join(rest[:n])]
    return "" if not rest else "?" + rest[0]


def may_import(importer: str, imported: str) -> bool:
    if importer == imported or imported in EDGE:
        return True
    if importer in EDGE:
        return imported in EDGE_IMPORTS
    return RANK[imported] > RANK[importer]


def test_the_table_names_real_layers():
    # the table must describe today's code: every module belongs to a layer, and the main layers exist
    unknown = sorted(m for m in MODULES if m != ROOT and layer_of(m).startswith("?"))
    assert not unknown, f"modules in no layer of ORDER/EDGE (add their package to the table): {unknown}"
    present = {layer_of(m) for m in MODULES if m != ROOT}
    assert {"cli", "views", "fleet", "analysis", "analysis.diagnosis", "model", "reader", "errors", "version",
            "collect"} <= present
    assert len(set(LAYERS)) == len(LAYERS)
    assert len(LAYER_OF_PREFIX) == sum(len(PREFIXES.get(layer, (layer,))) for layer in LAYERS)


def test_no_module_imports_the_package_root():
    offenders = [f"{i.module}:{i.line} takes {i.name or i.target} from the package root"
                 for i in ALL_IMPORTS if i.target == ROOT and i.module != ROOT]
    assert not offenders, "\n".join(offenders)


def test_each_layer_imports_only_itself_and_layers_below():
    offenders = []
    for i in ALL_IMPORTS:
        if i.module == ROOT or i.target == ROOT:
            continue  # the face imports what it shows; importing the root is the test above
        importer, imported = layer_of(i.module), layer_of(i.target)
        if not may_import(importer, imported):
            offenders.append(f"{i.module}:{i.line} ({importer}) imports {i.target} ({imported})")
    assert not offenders, "\n".join(offenders)


def private_imports() -> set[tuple[str, str]]:
    """(module, target.name) for every private name taken from another layer."""
    found = set()
    for i in ALL_IMPORTS:
        name = i.name or i.target.rsplit(".", 1)[-1]
        private = name.startswith("_") and not name.startswith("__")
        if private and i.module != ROOT and layer_of(i.module) != layer_of(i.target):
            found.add((i.module, f"{i.target}.{i.name}" if i.name else i.target))
    return found


def test_no_module_imports_another_layers_private_name():
    found = private_imports()
    new = sorted(found - PRIVATE_ALLOWED)
    assert not new, f"private names taken across layers (make them public, or move them down): {new}"


def test_private_allowlist_is_still_needed():
    stale = sorted(PRIVATE_ALLOWED - private_imports())
    assert not stale, f"these imports are gone: remove them from PRIVATE_ALLOWED: {stale}"


# The checks above on made-up modules, so that a broken resolver cannot pass silently.
@pytest.mark.parametrize("importer, imported, allowed", [
    ("cli", "reader", True), ("reader", "model", False), ("views", "fleet", True), ("fleet", "views", False),
    ("fleet", "tune", False), ("analysis", "analysis.diagnosis", False), ("analysis.runs", "analysis.diagnosis", True),
    ("analysis", "analysis.measures", True), ("analysis.measures", "analysis", False),
    ("collect", "errors", True), ("collect", "knobs", True), ("collect", "model", False), ("reader", "collect", True),
    ("errors", "version", False),
])
def test_order_rules(importer, imported, allowed):
    assert may_import(importer, imported) is allowed


def test_resolves_relative_and_private_imports(tmp_path):
    source = ("from ..summary import _slowest_rank_time\nfrom .. import conflicts as sweep\n"
              "def f():\n    from ... import __version__\n    import iolens.reader.regions\n")
    path = tmp_path / "context.py"
    path.write_text(source)
    got = {(i.target, i.name) for i in imports_of("iolens.analysis.diagnosis.context", path)}
    assert got == {("iolens.analysis.summary", "_slowest_rank_time"), ("iolens.analysis.conflicts", ""),
                   ("iolens", "__version__"), ("iolens.reader.regions", "")}
    assert layer_of("iolens.analysis.diagnosis.context") == "analysis.diagnosis"
    assert layer_of("iolens.analysis.summary") == "analysis"
    assert layer_of("iolens.analysis.compare") == layer_of("iolens.analysis.run_config") == "analysis.runs"
    assert layer_of("iolens.fleet.store") == "fleet"
    assert layer_of("iolens.reader._native") == "reader"
    assert layer_of("iolens") == ""
