"""The package's shape, read from the code: imports flow one way and nothing goes round.

The import graph is read with :mod:`ast` from every module of ``featagg_core`` and
``featagg_app``, imports inside functions included (a function-local import is still a
dependency; it only hides it). On that graph:

* no cycle, among all modules of both packages;
* ``featagg_core`` never imports streamlit or ``featagg_app``;
* a numba-compiled function (``@njit``, ``@jit``, ``@vectorize``, ``@guvectorize``,
  ``@cfunc``, ``@stencil``, or ``numba.njit(f)`` called on a function) lives only in
  ``featagg_core/_kernels/``;
* no ``featagg_core`` module imports one of a higher layer: ``_kernels`` → ``utils`` →
  ``data`` / ``metrics`` → the methods (``agglomeration``, ``xmlc``, ``graph``, ``vocab``) →
  ``distributed`` → ``runs`` (and the ``experiment`` facade) → ``artifacts`` → ``health`` /
  ``triage`` → ``cli``. ``artifacts.registry`` is a leaf (the class table and
  ``ArtifactError``, naming modules as strings) and sits with ``utils``;
* the dashboard's job runner (``featagg_app.server.jobs``) does not import streamlit.

``test_the_checks_can_fail`` runs the same checks on a small package written for the
purpose (a cycle, an upward import, a numba function outside ``_kernels``, streamlit in the
core) and expects each to be reported.
"""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Dict, Iterable, List, Set, Tuple

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("featagg_core", "featagg_app")

#: the layer of each part of featagg_core (the longest matching prefix wins); a module may
#: import modules of its own layer or a lower one
CORE_LAYERS: Dict[str, int] = {
    "featagg_core._kernels": 0,
    "featagg_core.utils": 1,
    "featagg_core.artifacts.registry": 1,
    "featagg_core.data": 2,
    "featagg_core.metrics": 2,
    "featagg_core.agglomeration": 3,
    "featagg_core.xmlc": 3,
    "featagg_core.graph": 3,
    "featagg_core.vocab": 3,
    "featagg_core.distributed": 4,
    "featagg_core.runs": 5,
    "featagg_core.experiment": 5,
    "featagg_core.artifacts": 6,
    "featagg_core.health": 7,
    "featagg_core.triage": 7,
    "featagg_core.cli": 8,
    "featagg_core.__main__": 8,
}
NUMBA_DECORATORS = {"njit", "jit", "vectorize", "guvectorize", "cfunc", "stencil",
                    "generated_jit"}


def modules_of(root: Path, packages: Iterable[str]) -> Dict[str, Tuple[Path, bool]]:
    """module name -> (file, is a package ``__init__``)."""
    out = {}
    for pkg in packages:
        for f in sorted((root / pkg).rglob("*.py")):
            parts = list(f.relative_to(root).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            out[".".join(parts)] = (f, is_pkg)
    return out


def _targets(node, module: str, is_pkg: bool, known) -> List[str]:
    """The modules an import statement names (a ``from P import name`` of a submodule
    ``P.name`` names the submodule)."""
    names = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".")
            if not is_pkg:
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            prefix = ".".join(base) + ("." + node.module if node.module else "")
        else:
            prefix = node.module or ""
        for a in node.names:
            sub = f"{prefix}.{a.name}"
            names.append(sub if sub in known else prefix)
    return names


def import_graph(root: Path, packages=PACKAGES):
    """(graph of intra-package imports, external top-level names imported per module,
    parsed trees). Imports inside functions and classes count."""
    mods = modules_of(root, packages)
    graph: Dict[str, Set[str]] = {m: set() for m in mods}
    external: Dict[str, Set[str]] = {m: set() for m in mods}
    trees = {}
    for m, (f, is_pkg) in mods.items():
        tree = ast.parse(f.read_text(encoding="utf-8"), filename=str(f))
        trees[m] = tree
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for t in _targets(node, m, is_pkg, mods):
                if t.split(".")[0] in packages:
                    while t and t not in mods:
                        t = t.rpartition(".")[0]
                    # a module's own package __init__ is not a dependency of the module
                    if t and t != m and not m.startswith(t + "."):
                        graph[m].add(t)
                else:
                    external[m].add(t.split(".")[0])
    return graph, external, trees


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def layer_of(module: str, layers: Dict[str, int] = CORE_LAYERS):
    best = None
    for prefix in layers:
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best):
                best = prefix
    return None if best is None else layers[best]


def upward_imports(graph, layers: Dict[str, int] = CORE_LAYERS) -> List[str]:
    bad = []
    for m, targets in sorted(graph.items()):
        lm = layer_of(m, layers)
        if lm is None:
            continue
        for t in sorted(targets):
            lt = layer_of(t, layers)
            if lt is not None and lt > lm:
                bad.append(f"{m} (layer {lm}) imports {t} (layer {lt})")
    return bad


def unplaced_core_modules(graph, layers: Dict[str, int] = CORE_LAYERS) -> List[str]:
    """featagg_core modules of no layer (only the lazy package root may be)."""
    return sorted(m for m in graph if m.startswith("featagg_core.")
                  and layer_of(m, layers) is None)


def _decorator_name(node) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def numba_functions_outside_kernels(trees) -> List[str]:
    bad = []
    for m, tree in sorted(trees.items()):
        if m.startswith("featagg_core._kernels"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for d in node.decorator_list:
                    if _decorator_name(d) in NUMBA_DECORATORS:
                        bad.append(f"{m}.{node.name} (@{_decorator_name(d)})")
            elif isinstance(node, ast.Call) and _decorator_name(node) in NUMBA_DECORATORS:
                f = node.func
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                        and f.value.id == "numba":
                    bad.append(f"{m}: numba.{f.attr}(...) at line {node.lineno}")
    return bad


def core_imports_of_the_app(graph, external) -> List[str]:
    bad = []
    for m in sorted(graph):
        if not m.startswith("featagg_core"):
            continue
        if "streamlit" in external[m]:
            bad.append(f"{m} imports streamlit")
        bad += [f"{m} imports {t}" for t in sorted(graph[m]) if t.startswith("featagg_app")]
    return bad


# ----------------------------------------------------------------------------- the repo
_GRAPH = None


def _repo():
    global _GRAPH
    if _GRAPH is None:
        _GRAPH = import_graph(ROOT)
    return _GRAPH


def test_no_import_cycles():
    graph, _, _ = _repo()
    assert cycles(graph) == []


def test_core_never_imports_streamlit_or_the_app():
    graph, external, _ = _repo()
    assert core_imports_of_the_app(graph, external) == []


def test_numba_functions_live_only_in_kernels():
    _, _, trees = _repo()
    assert numba_functions_outside_kernels(trees) == []


def test_core_imports_flow_down_the_layers():
    graph, _, _ = _repo()
    assert unplaced_core_modules(graph) == []
    assert upward_imports(graph) == []


def test_the_job_runner_does_not_import_streamlit():
    _, external, _ = _repo()
    assert "streamlit" not in external["featagg_app.server.jobs"]


def test_featagg_core_keeps_few_top_level_modules():
    top = sorted(p.name for p in (ROOT / "featagg_core").glob("*.py"))
    assert len(top) <= 12, top
    assert not list(ROOT.glob("featagg_*/**/*_support.py"))
    assert not list(ROOT.glob("featagg_*/**/*_helpers.py"))


# ----------------------------------------------------------------------------- negative
def _write(root: Path, files: Dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")


def test_the_checks_can_fail(tmp_path):
    _write(tmp_path, {
        "featagg_core/__init__.py": "",
        "featagg_core/_kernels/__init__.py": "",
        "featagg_core/utils/__init__.py": "",
        "featagg_core/utils/a.py": """
            def f():
                from featagg_core.utils import b   # inside a function: still an edge
                return b
            """,
        "featagg_core/utils/b.py": "from featagg_core.utils.a import f\n",
        "featagg_core/utils/low.py": """
            def g():
                from featagg_core.runs import run   # utils must not reach up to runs
            """,
        "featagg_core/runs/__init__.py": "",
        "featagg_core/runs/run.py": """
            import numba
            from numba import njit

            @njit(cache=True)
            def kernel(x):
                return x

            fast = numba.jit(lambda x: x)
            """,
        "featagg_core/lost.py": "import streamlit as st\nfrom featagg_app import page\n",
        "featagg_app/__init__.py": "",
        "featagg_app/page.py": "import streamlit\n",
    })
    graph, external, trees = import_graph(tmp_path)
    assert cycles(graph) == [["featagg_core.utils.a", "featagg_core.utils.b"]]
    assert upward_imports(graph) == [
        "featagg_core.utils.low (layer 1) imports featagg_core.runs.run (layer 5)"]
    assert unplaced_core_modules(graph) == ["featagg_core.lost"]
    found = numba_functions_outside_kernels(trees)
    assert any("featagg_core.runs.run.kernel" in x for x in found)
    assert any("numba.jit" in x for x in found)
    assert core_imports_of_the_app(graph, external) == [
        "featagg_core.lost imports streamlit", "featagg_core.lost imports featagg_app.page"]
