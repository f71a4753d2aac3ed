"""No tracked text file holds words about how the work went (the
numbered stops, helpers and reviewers, the sittings and sessions, the
nth review: the patterns below).  A document states what holds; git log
holds how it got there.

Left out: kernel patches and sent mails (patches/, backports/, next/,
fixes/, mailing/versions/: their bytes are what was sent or applied),
pytest's own "session" scope, and the test that names these words
itself (tests/test_records.py's pattern of history words in file names).
"""

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

WORDS = re.compile(r"\bstop [0-9]+|\bstops? [0-9]|helper-?[0-9]|\bsitting|\bsession\b"
                   r"|\breviewer [0-9]|(first|second|third|fourth|fifth) review", re.I)
# pytest's fixture scope and hook, not words about the work
PYTEST = re.compile(r'scope="session"|pytest_sessionstart\(session\)')
PATCH_DIRS = ("patches/", "backports/", "next/", "fixes/", "mailing/versions/")
ALLOWED = {"tests/test_records.py", "tests/test_no_history_words.py"}


def offending(rel, text):
    """[(line number, line)] of `text` (the file `rel`) that hold a word."""
    if rel in ALLOWED or (rel.startswith(PATCH_DIRS) and rel.endswith((".patch", ".eml",
                                                                        ".mbox"))):
        return []
    return [(n, line) for n, line in enumerate(text.splitlines(), 1)
            if WORDS.search(PYTEST.sub("", line))]


def tracked_text_files():
    out = subprocess.run(["git", "-C", str(REPO), "grep", "-Il", ""], capture_output=True,
                         text=True, check=True).stdout
    return [rel for rel in out.splitlines() if rel]


def test_no_tracked_file_holds_words_about_the_work():
    bad = []
    for rel in tracked_text_files():
        try:
            text = (REPO / rel).read_text(errors="replace")
        except OSError:
            continue        # deleted in the work tree, not yet committed
        bad += ["%s:%d: %s" % (rel, n, line.strip()[:100]) for n, line in offending(rel, text)]
    assert bad == []


def test_a_planted_word_is_found():
    planted = "As found in " + "st" + "op 25, the rule holds."
    assert offending("README.md", "ok\n%s\n" % planted) == [(2, planted)]
    assert offending("CHECKS.md", "made in the first " + "sit" + "ting") != []
    assert offending("tools/forkkit/x.py", "# helper-3 measured it") != []
    assert offending("mailing/changelog/v9.md", "- From a third review: x") != []
    # pytest's scope is no such word; a sent patch is not edited
    assert offending("tests/conftest.py", '@pytest.fixture(scope="session")') == []
    assert offending("next/0001-x.patch", "stop 3") == []
