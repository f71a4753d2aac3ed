"""The documents and `tools/fork VERB --help` against the argparse definitions."""

from forkkit import cli, cmd_frag, common


def test_frag_defaults_to_the_primary_series(kit, monkeypatch):
    """Without revisions, frag compares the primary series' distro and
    series branches, as bench and fstests do (not a fixed 6.12)."""
    built = []

    def build(rev, **_):
        built.append(rev)
        raise common.ForkError("stop after the first build")

    monkeypatch.setattr(cmd_frag, "build", build)
    assert cli.main(["frag"]) == 1
    assert built == ["distro/9.9"]
    assert cli.parser().parse_args(["frag"]).revs == []
