"""What the report-script tests share: a hand-made document in a temporary JSON file, and a script
run on it with this interpreter."""
import contextlib
import json
import os
import subprocess
import sys
import tempfile


@contextlib.contextmanager
def json_file(doc):
    """The path of a temporary file holding `doc` as JSON, removed on leaving the block."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "suite.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        yield path


def run(script, *args):
    """The standard output of `script ARGS...`; a non-zero exit fails the test."""
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                          check=True).stdout
