"""The package's layers: no import cycles, and lower layers never import higher ones."""

import ast
import os

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nalu_jax")


def module_imports() -> dict:
    """``{module: {imported nalu_jax modules}}`` from every import statement (lazy ones too)."""
    graph = {}
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(folder, f)
            rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
            name = rel.removesuffix(".__init__")
            deps = set()
            for node in ast.walk(ast.parse(open(path).read())):
                if isinstance(node, ast.Import):
                    deps |= {a.name for a in node.names if a.name.startswith("nalu_jax")}
                elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "nalu_jax"
                ):
                    for a in node.names:  # `from nalu_jax import run` may name a module
                        full = f"{node.module}.{a.name}"
                        sub = os.path.join(os.path.dirname(ROOT), *full.split("."))
                        is_module = os.path.exists(sub + ".py") or os.path.isdir(sub)
                        deps.add(full if is_module else node.module)
            graph[name] = {d for d in deps if d != name}
    return graph


def find_cycles(graph) -> list:
    cycles, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                cycles.append(path[path.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_no_import_cycles():
    assert find_cycles(module_imports()) == []


def test_finds_a_planted_cycle():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def upper(dep: str) -> bool:
    """The core, the config layer, the experiments and the entry points."""
    return dep.startswith(("nalu_jax.experiments", "nalu_jax.main")) or dep in (
        "nalu_jax.config", "nalu_jax.train", "nalu_jax.run", "nalu_jax.report",
        "nalu_jax.sweep", "nalu_jax.cli", "nalu_jax",
    )  # fmt: skip


def test_units_tasks_models_import_nothing_above_them():
    graph = module_imports()
    low = [m for m in graph if m.startswith(("nalu_jax.units", "nalu_jax.tasks"))]
    low += ["nalu_jax.models", "nalu_jax.sequence_models"]
    bad = {m: sorted(d for d in graph[m] if upper(d)) for m in low}
    assert {m: d for m, d in bad.items() if d} == {}


def test_config_layer_is_a_leaf():
    assert module_imports()["nalu_jax.config"] == set()


def test_scripts_need_no_path_hacks():
    """Scripts run as ``python -m launch.NAME`` (etc.) from the repository root, and the
    package is installed: nothing edits ``sys.path``."""
    root, needle = os.path.dirname(ROOT), "sys.path." + "insert"
    found = []
    for folder in ("nalu_jax", "launch", "benchmarks", "tools", "configs", "tests"):
        for here, _, files in os.walk(os.path.join(root, folder)):
            for f in files:
                if f.endswith(".py") and needle in open(os.path.join(here, f)).read():
                    found.append(os.path.relpath(os.path.join(here, f), root))
    assert found == []
    for folder in ("launch", "benchmarks", "tools"):
        assert os.path.exists(os.path.join(root, folder, "__init__.py"))
