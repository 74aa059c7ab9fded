"""Print ``name==minimum`` for every core dependency of pyproject.toml (what .ci/minimums installs)."""

import re
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
pins = []
for requirement in project["dependencies"]:
    match = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9.]*)\s*", requirement)
    if match is None:
        raise SystemExit(f"pyproject.toml: expected 'name>=minimum' for every dependency, received {requirement!r}")
    pins.append(f"{match[1]}=={match[2]}")
print(" ".join(pins))
