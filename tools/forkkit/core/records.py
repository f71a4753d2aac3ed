"""Records the kit keeps as JSON files: written whole or not at all."""

import json
import os


def write_json(path, data):
    """`data` as indented, key-sorted JSON at `path`, replacing the file in
    one step: a reader never sees half of it, two writers (processes)
    never share a temporary file, and a write that fails leaves the file
    as it was and no temporary file behind."""
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        with open(tmp, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_json(path, default):
    """The JSON at `path`, or `default` when there is none or it is unreadable."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return default
