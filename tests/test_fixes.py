"""fixes/: the standalone upstream fixes are well-formed mails and apply
where fixes/README.md says they do."""

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXES = sorted((REPO / "fixes").glob("*.patch"))
README = (REPO / "fixes" / "README.md").read_text()


def readme_applies():
    """{"0001": ([revs it applies to], [revs it must not])} from the README's
    "Applies to:" and "Not to" lines of each fix's section."""
    out = {}
    for sec in re.split(r"^## ", README, flags=re.M)[1:]:
        num = re.match(r"(\d{4}):", sec)
        good = re.search(r"^Applies to: (.+?)\.$", sec, re.M | re.S)
        bad = re.search(r"^Not to (\S+),", sec, re.M)
        if num and good:
            out[num.group(1)] = (re.findall(r"`([^`]+)`", good.group(1)),
                                 ["distro/" + bad.group(1)] if bad else [])
    return out


APPLIES = readme_applies()


def test_there_are_fixes():
    assert FIXES, "fixes/ holds no patch"
    assert {p.name[:4] for p in FIXES} == set(APPLIES)


@pytest.mark.parametrize("patch", FIXES, ids=lambda p: p.name[:4])
def test_fix_is_a_mail_for_stable(patch):
    text = patch.read_text()
    head, _, body = text.partition("\n\n")
    assert re.search(r"^Subject: \[PATCH\] ext2: ", head, re.M), head
    fixes = re.findall(r'^Fixes: ([0-9a-f]{12,40}) \("(.+)"\)$', body, re.M)
    assert len(fixes) == 1, "one Fixes: line, 12+ hex digits and the quoted subject"
    sha, subject = fixes[0]
    # the log cites the same commit, as checkpatch wants it cited
    assert re.search(r'[Cc]ommit %s \("%s"\)' % (sha[:12], re.escape(" ".join(subject.split()))),
                     " ".join(body.split()))
    assert re.search(r"^Cc: stable@vger\.kernel\.org( # \S+)?$", body, re.M)
    assert re.search(r"^Signed-off-by: .+ <.+>$", body, re.M)
    assert "\n---\n" in body and "diff --git a/fs/ext2/" in body


def _ktree():
    import sys
    sys.path.insert(0, str(REPO / "tools"))
    from forkkit.common import ktree
    return ktree()


def _apply_check(tree, rev, patch, tmp_path):
    """git apply --check of `patch` on `rev`'s tree (a scratch index; the
    user's checkout is not touched)."""
    index = {"GIT_INDEX_FILE": str(tmp_path / ("index-" + rev.replace("/", "-")))}
    env = dict(os.environ, **index)
    subprocess.run(["git", "read-tree", rev], cwd=tree, env=env, check=True,
                   capture_output=True)
    return subprocess.run(["git", "apply", "--check", "--cached", str(patch)], cwd=tree,
                          env=env, capture_output=True, text=True)


@pytest.mark.skipif(os.environ.get("FORK_INTEGRATION") != "1",
                    reason="needs the imported kernel tree: FORK_INTEGRATION=1")
@pytest.mark.parametrize("patch", FIXES, ids=lambda p: p.name[:4])
def test_fix_applies_where_the_readme_says(patch, tmp_path):
    tree = _ktree()
    good, bad = APPLIES[patch.name[:4]]
    have = lambda rev: subprocess.run(["git", "rev-parse", "--verify", "-q", rev + "^{commit}"],
                                      cwd=tree, capture_output=True).returncode == 0
    checked = 0
    for rev in good:
        if have(rev):
            proc = _apply_check(tree, rev, patch, tmp_path)
            assert proc.returncode == 0, (rev, proc.stderr)
            checked += 1
    for rev in bad:
        if have(rev):
            assert _apply_check(tree, rev, patch, tmp_path).returncode != 0, rev
    if not checked:
        pytest.skip("none of %s imported" % ", ".join(good))
