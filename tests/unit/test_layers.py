"""Import layering of src/iolens, read from the source (ast), not by importing it.

Data flows one way: each layer imports only itself and the layers below it, no module imports the package
root (`iolens/__init__.py` is the face for users), no module imports another layer's private name, and inside
each folder (package) the modules do not import each other in a circle.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "iolens"

# Layers, top to bottom. A layer may import itself and the layers of any rank below its own; layers of one rank
# may not import each other. A layer's modules are those under its prefixes (its own name unless PREFIXES says
# otherwise); a module belongs to the layer with the longest prefix naming it. Packages that do not exist yet are
# simply listed. What the code showed when this was written:
#   cli imports every layer; the pipeline (read -> diagnose -> render) wires the layers below for it;
#   fleet and tune run many logs and many runs: they use the views' pages (tune writes its study page) and the
#   views draw what they are given (fleet's columns, tune's records) without importing them;
#   analysis/{compare,fleet,runs,run_config}.py build on the diagnosis, which builds on the other analyses.
ORDER: list[tuple[str, ...]] = [
    ("cli", "mcp"),  # the two faces: the command line and the MCP server for agents (iolens mcp)
    ("pipeline",),  # what the faces open and judge (pipeline/sources.py: the targets of iolens sql and mcp)
    ("fleet", "tune"),
    ("views",),
    ("jobs",),
    ("analysis.runs",),
    ("analysis.diagnosis",),
    ("analysis",),
    ("analysis.measures",),
    ("model",),
    ("reader",),  # with its native module, reader._native (compiled: imports nothing of iolens)
    ("output",),  # files written whole or not at all (a path that cannot be written: a LogError)
    ("errors", "version", "units"),  # units: the one parser of sizes, durations and shares people type
]
PREFIXES = {
    "analysis.runs": ("analysis.compare", "analysis.fleet", "analysis.runs", "analysis.run_config"),
    # the trace as numpy columns and its groupings sit beside the measures, which read the trace through them
    "analysis.measures": ("analysis.measures", "analysis.segments"),
}
# At the edge, beside the format: processes, environments and the optional dependencies' loader. Any layer may
# use them; they import only these.
EDGE = ("collect", "knobs", "optional")
EDGE_IMPORTS = EDGE + ("errors", "version", "units", "output")

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
    assert {"cli", "pipeline", "views", "fleet", "analysis", "analysis.diagnosis", "model", "reader", "errors",
            "version", "collect", "optional"} <= present
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


# What only the pipeline does: the views render what it computed (no view judges a log or re-evaluates the
# fleet's rules), and nothing below it picks a view for a caller (the tune page is the pipeline's to give).
JUDGES = {("iolens.analysis.diagnosis", "diagnose"), ("iolens.analysis.diagnosis", "diagnose_context"),
          ("iolens.fleet.insights", "with_insights"), ("iolens.fleet.insights", "log_columns"),
          ("iolens.fleet.recompute", "with_thresholds")}


def test_no_view_runs_the_diagnosis():
    offenders = [f"{i.module}:{i.line} takes {i.target}.{i.name}" for i in ALL_IMPORTS
                 if layer_of(i.module) == "views" and ((i.target, i.name) in JUDGES or i.target in
                                                         ("iolens.fleet.insights", "iolens.fleet.recompute"))]
    assert not offenders, "\n".join(offenders)


def test_the_judging_names_exist():
    # the list above must name what the code defines, or the test before it would pass on a rename
    for module, name in JUDGES:
        tree = ast.parse(MODULES[module].read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        defined |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert name in defined, (module, name)


def test_imports_sit_at_the_top_of_modules():
    """No import inside a function: what loads lazily on purpose does it by name, optional.py (the optional
    dependencies, `require`) and cli/main.py (each subcommand's module)."""
    allowed: dict = {}  # module prefix -> how many it may keep (none now: the diagnosis' 15 moved to the top)
    found: dict = {}
    for module, path in MODULES.items():
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        found.setdefault(module, set()).add((node.lineno, node.col_offset))
    counts = {}
    for module, nodes in found.items():
        key = next((k for k in allowed if module == k or module.startswith(k + ".")), module)
        counts[key] = counts.get(key, 0) + len(nodes)
    extra = {m: n for m, n in counts.items() if n > allowed.get(m, 0)}
    assert not extra, f"imports inside functions (move them to the top, or load an optional one via optional.require): {extra}"


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


# Import cycles inside one folder that exist today, each to be removed by the work named beside it (sorted
# members of the cycle). The test fails when an entry is no longer needed, so this list only shrinks.
CYCLES_ALLOWED: set[tuple[str, ...]] = set()  # emptied by issue 28 (one Log contract, one pipeline)
PACKAGES = sorted(m for m, path in MODULES.items() if path.name == "__init__.py")


def entry_of(folder: str, module: str) -> str | None:
    """What `module` is inside package `folder`: the package itself (its __init__), one of its modules, or one of
    its subpackages (any module under it); None outside the folder."""
    if module == folder:
        return folder
    if module.startswith(folder + "."):
        return folder + "." + module[len(folder) + 1:].split(".")[0]
    return None


def folder_edges(folder: str, imports) -> dict:
    """entry -> the entries of the same folder it imports (`entry_of`)."""
    edges: dict = {}
    for i in imports:
        a, b = entry_of(folder, i.module), entry_of(folder, i.target)
        if a and b and a != b:
            edges.setdefault(a, set()).add(b)
    return edges


def cycles(edges: dict) -> list:
    """The strongly connected components of more than one entry (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on.discard(component[-1])
            if len(component) > 1:
                out.append(tuple(sorted(component)))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def folder_cycles() -> set:
    return {c for folder in PACKAGES for c in cycles(folder_edges(folder, ALL_IMPORTS))}


def test_no_folder_imports_itself_in_a_circle():
    new = sorted(folder_cycles() - CYCLES_ALLOWED)
    assert not new, "modules of one folder importing each other in a circle (move the shared part down into a " \
                    f"module both import): {new}"


def test_cycle_allowlist_is_still_needed():
    stale = sorted(CYCLES_ALLOWED - folder_cycles())
    assert not stale, f"these cycles are gone: remove them from CYCLES_ALLOWED: {stale}"


@pytest.mark.parametrize("imports, found", [
    ([("p.a", "p.b"), ("p.b", "p.a")], [("p.a", "p.b")]),  # two modules
    ([("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a")], [("p.a", "p.b", "p.c")]),  # through a third
    ([("p", "p.a"), ("p.a", "p")], [("p", "p.a")]),  # a module taking a name from its package's __init__
    ([("p.s.x", "p.b"), ("p.b", "p.s.y")], [("p.b", "p.s")]),  # a subpackage counts as one entry
    ([("p.a", "p.b"), ("p.a", "p.c"), ("p.b", "p.c")], []),  # layered: no cycle
    ([("p.a", "q.b"), ("q.b", "p.a")], []),  # across folders: the layer test's business
])
def test_folder_cycles_on_made_up_modules(imports, found):
    edges = folder_edges("p", [Import(a, b, "", 1) for a, b in imports])
    assert cycles(edges) == found


# The checks above on made-up modules, so that a broken resolver cannot pass silently.
@pytest.mark.parametrize("importer, imported, allowed", [
    ("cli", "reader", True), ("cli", "pipeline", True), ("pipeline", "cli", False), ("pipeline", "views", True),
    ("views", "pipeline", False), ("fleet", "pipeline", False), ("tune", "pipeline", False), ("tune", "views", True),
    ("views", "fleet", False), ("views", "tune", False), ("fleet", "optional", True), ("optional", "errors", True),
    ("optional", "model", False), ("reader", "model", False),
    ("fleet", "tune", False), ("analysis", "analysis.diagnosis", False), ("analysis.runs", "analysis.diagnosis", True),
    ("analysis", "analysis.measures", True), ("analysis.measures", "analysis", False),
    ("collect", "errors", True), ("collect", "knobs", True), ("collect", "model", False), ("reader", "collect", True),
    ("errors", "version", False), ("knobs", "units", True), ("analysis.diagnosis", "units", True),
    ("tune", "units", True), ("units", "errors", False),
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
