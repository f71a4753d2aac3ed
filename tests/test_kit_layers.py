"""The kit's layers (tools/forkkit/README.md): a module imports only from
its own layer or a lower one, a verb never imports another verb, every
module is in a layer, and no modules import each other in a circle.

Read from the source with `ast`, every import of every module (those
inside functions too), so the rule holds for code that has not run."""

import ast
import os
import shutil
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parent.parent / "tools" / "forkkit"
PACKAGE = "forkkit"
# lowest first; cli (the front end) is above them all
LAYERS = ["core", "repo", "build", "guest", "verify", "publish", "verbs"]
TOP = {"cli": len(LAYERS), "__init__": len(LAYERS)}


def modules(root):
    """{dotted name inside the package: path} of every module under `root`
    (a package's __init__.py is the package's own name)."""
    out = {}
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        rel = os.path.relpath(dirpath, root)
        parts = [] if rel == "." else rel.split(os.sep)
        for f in sorted(files):
            if f.endswith(".py"):
                name = parts + ([] if f == "__init__.py" else [f[:-3]])
                out[".".join(name) or "__init__"] = os.path.join(dirpath, f)
    return out


def imports(name, path, known):
    """[(line, imported module)] of the kit's own modules that `path` (the
    module `name`) imports: `from . import x` names the module x when there
    is one, `from .x import y` the module x (or x.y when that is one)."""
    tree = ast.parse(Path(path).read_text(), path)
    package = name.split(".") if os.path.basename(path) == "__init__.py" else \
        name.split(".")[:-1]
    if name == "__init__":
        package = []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == PACKAGE:
                    out.append((node.lineno, ".".join(parts[1:]) or "__init__"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1] if node.level > 1 else package
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == PACKAGE:
                target = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:
                sub = ".".join(target + [alias.name])
                mod = sub if sub in known else ".".join(target) or "__init__"
                out.append((node.lineno, mod))
    return out


def rank(name):
    top = name.split(".")[0]
    if top in LAYERS:
        return LAYERS.index(top)
    return TOP.get(name)


def violations(root):
    """Every breach of the layer rule in the package at `root`, one line each."""
    known = modules(root)
    bad, graph = [], {}
    for name, path in known.items():
        where = os.path.relpath(path, root)
        if rank(name) is None:
            bad.append("%s: not in a layer (%s, or cli)" % (where, ", ".join(LAYERS)))
            continue
        for line, target in imports(name, path, known):
            if target not in known:
                bad.append("%s:%d imports %s, which is no module of the kit"
                           % (where, line, target))
                continue
            graph.setdefault(name, set()).add(target)
            if rank(target) is None:
                continue            # reported as not in a layer
            if rank(target) > rank(name):
                bad.append("%s:%d imports %s, a higher layer (%s above %s)"
                           % (where, line, target, target.split(".")[0], name.split(".")[0]))
            elif name.startswith("verbs.") and target.startswith("verbs.") \
                    and target != "verbs" and name != "verbs":
                bad.append("%s:%d: the verb %s imports the verb %s"
                           % (where, line, name[len("verbs."):], target[len("verbs."):]))
    bad += ["import cycle: %s" % " -> ".join(c) for c in cycles(graph)]
    return bad


def cycles(graph):
    """Every circle of imports in `graph` once, each from its least name."""
    found = set()

    def walk(node, path):
        for nxt in sorted(graph.get(node, ())):
            if nxt == path[0]:
                found.add(tuple(path + [nxt]))
            elif nxt not in path and nxt > path[0]:
                walk(nxt, path + [nxt])
    for start in sorted(graph):
        walk(start, [start])
    return sorted(found)


def test_the_kit_keeps_its_layers():
    assert violations(KIT) == []


def test_every_layer_has_its_package():
    known = modules(KIT)
    assert [layer for layer in LAYERS if layer not in known] == []
    assert sorted(n for n in known if "." not in n and n not in LAYERS) == ["__init__", "cli"]


@pytest.fixture
def kit_copy(tmp_path):
    root = tmp_path / PACKAGE
    shutil.copytree(KIT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def plant(path, line):
    text = path.read_text()
    path.write_text(text + "\n" + line + "\n")
    return len(text.splitlines()) + 2


@pytest.mark.parametrize("where,line,said", [
    # a lower layer reaching up (inside a function too)
    ("core/paths.py", "from ..verify import kernel  # planted",
     "core/paths.py:{n} imports verify.kernel, a higher layer (verify above core)"),
    ("repo/series.py", "def f():\n    from ..build.kbuild import build  # planted",
     "repo/series.py:{n} imports build.kbuild, a higher layer (build above repo)"),
    ("guest/qemu.py", "import forkkit.publish.export  # planted",
     "guest/qemu.py:{n} imports publish.export, a higher layer (publish above guest)"),
    # a verb using another verb
    ("verbs/update.py", "from . import rebase  # planted",
     "verbs/update.py:{n}: the verb update imports the verb rebase"),
    ("verbs/frag.py", "from ..verbs.bench import main  # planted",
     "verbs/frag.py:{n}: the verb frag imports the verb bench"),
])
def test_a_planted_violation_is_named(kit_copy, where, line, said):
    n = plant(kit_copy / where, line)
    if "def f" in line:
        n += 1
    assert said.format(n=n) in violations(kit_copy)


def test_a_planted_cycle_and_a_module_outside_the_layers_are_named(kit_copy):
    plant(kit_copy / "core" / "errors.py", "from . import progress  # planted")
    plant(kit_copy / "core" / "progress.py", "from . import errors  # planted")
    (kit_copy / "stray.py").write_text("from .core import errors\n")
    bad = violations(kit_copy)
    assert "import cycle: core.errors -> core.progress -> core.errors" in bad
    assert "stray.py: not in a layer (%s, or cli)" % ", ".join(LAYERS) in bad


# Pieces the kit had several copies of, each now in one module: the text
# that gives a copy away, and the module that may hold it.
ONCE = [
    ('"worktree", "add"', "repo/worktree.py"),         # a worktree of the kernel tree
    ("|---", "core/tables.py"),                         # a markdown table's rule
    ("| ---", "core/tables.py"),
    ("---|", "core/tables.py"),
    ("files_hash(", "core/proc.py"),                    # the hash of the kit's code
]


@pytest.mark.parametrize("text,home", ONCE, ids=[h for _, h in ONCE])
def test_a_shared_piece_lives_in_one_module(text, home):
    holders = sorted(os.path.relpath(p, KIT) for p in modules(KIT).values()
                     if text in Path(p).read_text())
    if text.endswith("("):      # a function: defined in one place, called anywhere
        holders = [h for h in holders if "def " + text in (KIT / h).read_text()]
    assert holders == [home]
