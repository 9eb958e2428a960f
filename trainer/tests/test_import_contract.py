"""The trainer's import contract: its modules import one way, bottom to top, and never in a circle.

    base (errors, log) <- model/ <- train/ <- serve/ <- entry points (__main__, vllm_worker, ...)

A module may import modules of its own layer and of the layers below it, never above. LAYERS below is
the one statement of that order; a module it does not name fails the test, so a new module gets a
place on purpose. The imports are read from the source with `ast`, not by importing anything, and
every import statement counts wherever it stands: at the top, inside a function, or under
`if TYPE_CHECKING:`. A deferred import still ties the two modules together (it only hides a circle
until the function runs), and a type-only one is still a dependency of the design. An edge goes to
the module named: `from . import lora` is an edge to `train.lora`, and `from .config import
TrainConfig` one to `train.config`. The packages a module sits in are not edges, although Python runs
their `__init__` first; so that no circle hides there, package files import nothing.

Each rule is also run on a small bad package written to a temporary directory, so a reader that
found no imports at all could not pass.
"""
import ast
import os
from typing import Dict, List, Optional, Sequence, Set, Tuple

import pytest

PACKAGE = "atk_trainer"
TRAINER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Bottom to top. "x.*" is the package x and every module under it; a plain name is that module only.
LAYERS: Sequence[Tuple[str, Sequence[str]]] = (
    ("base", ("atk_trainer.errors", "atk_trainer.log", "atk_trainer.openblas_core")),
    ("model", ("atk_trainer.model.*",)),
    ("train", ("atk_trainer.train.*",)),
    ("serve", ("atk_trainer.serve.*",)),
    (
        "entry",
        (
            "atk_trainer",
            "atk_trainer.__main__",
            "atk_trainer.merge_lora",
            "atk_trainer.import_gguf",
            "atk_trainer.vllm_worker",
            "atk_trainer.torchrun",
            "atk_trainer.wandb_logger",
        ),
    ),
)

Graph = Dict[str, Set[str]]


def test_the_trainer_has_no_import_circle():
    assert circles(import_graph(TRAINER_DIR, PACKAGE)) == []


def test_the_trainer_imports_only_downward():
    assert upward_imports(import_graph(TRAINER_DIR, PACKAGE), LAYERS) == []


def test_every_trainer_module_has_a_layer():
    assert unplaced(import_graph(TRAINER_DIR, PACKAGE), LAYERS) == []


def test_the_trainers_package_files_import_nothing_but_the_root_its_base_layer():
    # The one exception: atk_trainer/__init__.py runs openblas_core before any module imports torch (OpenBLAS
    # reads its kernel choice once, when torch loads it). A base module imports nothing of the package, so
    # no circle can hide behind it.
    graph = import_graph(TRAINER_DIR, PACKAGE)
    base = set(dict(LAYERS)["base"])
    assert graph[PACKAGE] and set(graph[PACKAGE]) <= base
    assert [p for p in importing_packages(TRAINER_DIR, PACKAGE) if p != PACKAGE] == []


def test_the_trainer_graph_holds_its_deferred_imports():
    graph = import_graph(TRAINER_DIR, PACKAGE)
    assert "atk_trainer.train.train" in graph["atk_trainer.serve.control"]  # inside ControlApi.load_model
    assert "atk_trainer.serve.vllm_worker" in graph["atk_trainer.serve.engine_api"]  # inside a method
    assert "atk_trainer.model.attention_cache" in graph["atk_trainer.model.decoder"]


def test_the_development_page_draws_the_layers_in_this_order():
    """docs/development.md shows the trainer's layers top to bottom; the picture follows LAYERS."""
    page = os.path.join(os.path.dirname(TRAINER_DIR), "docs", "development.md")
    if not os.path.exists(page):
        pytest.skip("no docs/ beside the trainer (an installed package)")
    text = open(page, encoding="utf8").read()
    picture = text.split("## Trainer layers", 1)[1].split("```", 2)[1]
    drawn = [line.split()[0] for line in picture.strip().splitlines()]
    assert drawn == [name for name, _ in reversed(LAYERS)]


def test_reading_finds_every_kind_of_import(tmp_path):
    write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a/__init__.py": "",
            "pkg/a/one.py": "import os\nimport pkg.a.two\nfrom pkg.b import three\n",
            "pkg/a/two.py": "from . import one\nfrom ..b.three import X\n",
            "pkg/b/__init__.py": "",
            "pkg/b/three.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from ..a import one\n"
                "def f():\n    from .four import g\n"
                "X = 1\n"
            ),
            "pkg/b/four.py": "from .. import a\n",
        },
    )
    assert import_graph(str(tmp_path), "pkg") == {
        "pkg": set(),
        "pkg.a": set(),
        "pkg.a.one": {"pkg.a.two", "pkg.b.three"},
        "pkg.a.two": {"pkg.a.one", "pkg.b.three"},
        "pkg.b": set(),
        "pkg.b.three": {"pkg.a.one", "pkg.b.four"},
        "pkg.b.four": {"pkg.a"},
    }


def test_a_circle_is_reported_even_through_a_deferred_import(tmp_path):
    write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/log.py": "",
            "pkg/server.py": "from .engine import Engine\nfrom .log import log\n",
            "pkg/engine.py": "from .decode import step\nclass Engine: pass\n",
            "pkg/decode.py": "def step():\n    from .server import log\n",
        },
    )
    assert circles(import_graph(str(tmp_path), "pkg")) == [["pkg.decode", "pkg.engine", "pkg.server"]]


def test_an_upward_import_is_reported(tmp_path):
    write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model/__init__.py": "",
            "pkg/model/decoder.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..serve.cache import Cache\n"
            ),
            "pkg/train/__init__.py": "",
            "pkg/train/loss.py": "from ..model import decoder\n",
            "pkg/serve/__init__.py": "",
            "pkg/serve/cache.py": "from ..train.loss import f\n",
        },
    )
    layers = (
        ("model", ("pkg.model.*",)),
        ("train", ("pkg.train.*",)),
        ("serve", ("pkg.serve.*",)),
        ("entry", ("pkg",)),
    )
    graph = import_graph(str(tmp_path), "pkg")
    assert upward_imports(graph, layers) == ["pkg.model.decoder (model) imports pkg.serve.cache (serve)"]
    assert unplaced(graph, layers) == []


def test_a_package_file_that_imports_is_reported(tmp_path):
    write_package(tmp_path, {"pkg/__init__.py": "", "pkg/a/__init__.py": "from .b import B\n", "pkg/a/b.py": ""})
    assert importing_packages(str(tmp_path), "pkg") == ["pkg.a"]


def test_a_module_outside_every_layer_is_reported(tmp_path):
    write_package(tmp_path, {"pkg/__init__.py": "", "pkg/model/__init__.py": "", "pkg/util.py": ""})
    layers = (("model", ("pkg.model.*",)), ("entry", ("pkg",)))
    assert unplaced(import_graph(str(tmp_path), "pkg"), layers) == ["pkg.util"]


def import_graph(root: str, package: str) -> Graph:
    """Module name -> the package's modules it imports, for every .py file under root/package."""
    files = {}
    for directory, _, names in os.walk(os.path.join(root, package)):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                parts = os.path.relpath(path, root)[: -len(".py")].split(os.sep)
                is_package = parts[-1] == "__init__"
                files[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    graph: Graph = {}
    for module, (path, is_package) in files.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        here = module.split(".") if is_package else module.split(".")[:-1]  # the package relative imports start in
        graph[module] = {target for node in ast.walk(tree) for target in _targets(node, here, files)} - {module}
    return graph


def importing_packages(root: str, package: str) -> List[str]:
    """The packages (directories with an __init__.py) whose __init__ imports a module of `package`."""
    graph = import_graph(root, package)
    return [m for m in sorted(graph) if graph[m] and os.path.isdir(os.path.join(root, *m.split(".")))]


def _targets(node: ast.AST, here: List[str], modules: Dict[str, object]) -> List[str]:
    """The modules of `modules` an import statement names (none for other nodes or other packages)."""
    if isinstance(node, ast.Import):
        return [m for m in (_nearest(alias.name, modules) for alias in node.names) if m]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        if node.level > len(here):
            raise ValueError(f"relative import beyond the top package: {'.' * node.level}{node.module or ''}")
        base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    found = []
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        target = submodule if submodule in modules else _nearest(base, modules)
        if target:
            found.append(target)
    return found


def _nearest(name: str, modules: Dict[str, object]) -> str:
    """`name` or the closest package above it that is one of `modules`; "" when none is."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def circles(graph: Graph) -> List[List[str]]:
    """Every set of modules that import each other, directly or around a loop (Tarjan's strongly
    connected components of more than one module), each sorted, in sorted order."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    found: List[List[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def upward_imports(graph: Graph, layers: Sequence[Tuple[str, Sequence[str]]]) -> List[str]:
    """One line per import of a module in a higher layer than the importer's."""
    found = []
    for module in sorted(graph):
        source = _layer(module, layers)
        for target in sorted(graph[module]):
            layer = _layer(target, layers)
            if source is not None and layer is not None and layer[0] > source[0]:
                found.append(f"{module} ({source[1]}) imports {target} ({layer[1]})")
    return found


def unplaced(graph: Graph, layers: Sequence[Tuple[str, Sequence[str]]]) -> List[str]:
    return [module for module in sorted(graph) if _layer(module, layers) is None]


def _layer(module: str, layers: Sequence[Tuple[str, Sequence[str]]]) -> Optional[Tuple[int, str]]:
    """(position from the bottom, name) of the layer that holds `module`; None when none does."""
    for position, (name, patterns) in enumerate(layers):
        for pattern in patterns:
            if pattern.endswith(".*"):
                package = pattern[: -len(".*")]
                if module == package or module.startswith(package + "."):
                    return position, name
            elif module == pattern:
                return position, name
    return None


def write_package(root, files: Dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
