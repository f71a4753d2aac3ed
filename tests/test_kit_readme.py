"""tools/forkkit/README.md says what the kit is: every module is named in
its reading order, and its table of environment variables lists every
FORK_* name used in tools/ or tests/, each once, and no other."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / "tools" / "forkkit"
README = KIT / "README.md"
NAME_RE = re.compile(rb"FORK_[A-Z0-9_]+")
ROW_RE = re.compile(r"^\| `(FORK_[A-Z0-9_]+)` \| (.+) \|$")


def listed():
    """The names of the README's table, in order (a name twice stays twice)."""
    text = README.read_text()
    section = text.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for m in map(ROW_RE.match, section.splitlines()) if m]


def used():
    """{FORK_* name: [files that use it]} in tools/ and tests/ (not the README)."""
    out = {}
    for top in (ROOT / "tools", ROOT / "tests"):
        for path in sorted(top.rglob("*")):
            if not path.is_file() or path == README or "__pycache__" in path.parts:
                continue
            for name in set(NAME_RE.findall(path.read_bytes())):
                out.setdefault(name.decode(), []).append(str(path.relative_to(ROOT)))
    return out


def test_every_fork_variable_is_listed_once():
    names = listed()
    assert names, "no table of environment variables in %s" % README
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
    missing = {n: files for n, files in used().items() if n not in names}
    assert missing == {}, "used but not in tools/forkkit/README.md"
    unused = [n for n in names if n not in used()]
    assert unused == [], "listed in tools/forkkit/README.md but used nowhere"


def test_every_module_is_in_the_reading_order():
    text = README.read_text()
    mods = sorted(p.relative_to(KIT).as_posix() for p in KIT.rglob("*.py")
                  if p.name != "__init__.py" and p.parent.name != "verbs")
    assert [m for m in mods if "`%s`" % m.split("/")[-1] not in text
            and "`%s`" % m not in text] == []
    layers = [d.name for d in sorted(KIT.iterdir()) if (d / "__init__.py").exists()]
    assert [d for d in layers if "`%s/`" % d not in text] == []
