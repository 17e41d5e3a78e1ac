"""Reads the --json file of a //bench run for the scripts beside it."""

import json
import sys


def load_figures(path, tool, keys=("name", "ratio")):
    """The file's figures by name; exits naming `tool`, the file and what is
    wrong when it cannot be read, is not a list of figures, or an entry
    lacks one of `keys`."""
    try:
        with open(path) as f:
            figures = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{tool}: cannot read {path}: {e}")
    if not isinstance(figures, list):
        sys.exit(f"{tool}: {path} is not a list of figures")
    by_name = {}
    for i, figure in enumerate(figures):
        if not isinstance(figure, dict) or not all(k in figure for k in keys):
            sys.exit(f"{tool}: {path}: entry {i} lacks one of "
                     f"{', '.join(keys)}")
        by_name[figure["name"]] = figure
    return by_name
