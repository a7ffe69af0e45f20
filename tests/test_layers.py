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


#: The package's layers, lowest first: a module may import its own layer and the ones below,
#: never one above. Keys are subpackages or flat modules of ``nalu_jax`` ("" is the package
#: itself, whose ``__init__`` gathers the public names).
LAYERS = (
    {"config", "rng"},  # leaves: the config layer, the hash sampler
    {"units", "tasks", "envs"},  # units, data generators, environments
    {"models", "rl"},  # networks built from units; agents and A2C
    {"reporting"},  # writers, statistics, plots, TensorBoard
    {"runtime"},  # checkpoints, workdirs, multi-host, host set-up
    {"engine"},  # training core, the loop over seed blocks, run(), sweeps
    {"experiments"},  # one module per experiment on the engine
    {"reproduce", "cli"},  # published tables; the command line's errors and flags
    {"main", ""},  # the entry point; the package's public names
)


def layer_of(module: str) -> int:
    part = module.split(".")[1] if "." in module else ""
    ranks = [i for i, names in enumerate(LAYERS) if part in names]
    assert ranks, f"{module}: add its subpackage to LAYERS in tests/test_layers.py"
    return ranks[0]


def upward_imports(graph) -> dict:
    """``{module: [imports from a higher layer]}`` for every module that has any."""
    bad = {m: sorted(d for d in deps if layer_of(d) > layer_of(m)) for m, deps in graph.items()}
    return {m: d for m, d in bad.items() if d}


def test_nothing_imports_a_higher_layer():
    assert upward_imports(module_imports()) == {}


def test_finds_a_planted_upward_import():
    graph = {
        "nalu_jax.units.nac": {"nalu_jax.engine.train"},
        "nalu_jax.engine.loop": {"nalu_jax.runtime.checkpoint", "nalu_jax.units"},
        "nalu_jax.runtime.checkpoint": {"nalu_jax.engine.loop"},
    }
    assert upward_imports(graph) == {
        "nalu_jax.units.nac": ["nalu_jax.engine.train"],
        "nalu_jax.runtime.checkpoint": ["nalu_jax.engine.loop"],
    }


def test_few_modules_left_flat():
    """Everything but the entry points, the config layer and the sampler lives in a
    subpackage named after what it holds."""
    flat = sorted(f for f in os.listdir(ROOT) if f.endswith(".py"))
    assert flat == ["__init__.py", "cli.py", "config.py", "main.py", "rng.py"]


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
