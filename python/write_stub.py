"""Writes kvsim.pyi from kvsim.pyi.in and the built module (the build runs this after linking):
python3 write_stub.py TEMPLATE OUT, with the module on PYTHONPATH."""
import sys

import kvsim

template, out = sys.argv[1], sys.argv[2]
with open(template) as f:
    text = f.read()
with open(out, "w") as f:
    f.write(text.replace("@REPLAY_KEYWORDS@", kvsim._stub_keywords()))
