"""What every reports/published/*/reproduce.py shares: running kvsim, the error of a figure,
the command line (--kvsim, --work, --out) and the published figures beside the script.

Stdlib only; each script puts this folder on sys.path and imports it.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def run(cmd):
    """stdout of `cmd`; a failure stops the script with the command and its stderr."""
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + done.stderr)
    return done.stdout


def pct_error(kvsim, published):
    """kvsim's error against a published figure, in percent."""
    return 100.0 * (kvsim - published) / published


def arguments(doc, here, work, extra=None):
    """--kvsim (default: the default preset's build), --work (scratch folder) and --out (report.md
    beside the script); `extra(parser)` may add more."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--kvsim", default=os.path.join(ROOT, "build", "default", "cli", "kvsim"))
    ap.add_argument("--work", default=work)
    ap.add_argument("--out", default=os.path.join(here, "report.md"))
    if extra:
        extra(ap)
    return ap.parse_args()


def load_published(here):
    with open(os.path.join(here, "published.json")) as f:
        return json.load(f)


def regenerate_lines(folder):
    """The report's closing section: how to regenerate it."""
    return ["## Regenerate", "", "    cmake --build --preset default --target kvsim",
            "    reports/published/%s/reproduce.py" % folder, ""]


def write_report(path, text):
    """Writes the report and prints it."""
    with open(path, "w") as f:
        f.write(text)
    print(text)
