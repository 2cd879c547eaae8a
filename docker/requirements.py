#!/usr/bin/env python3
"""Print the requirements of pyproject.toml, one a line: `requirements.py pyproject.toml` -> the dependencies,
`requirements.py pyproject.toml EXTRA...` -> only those extras. Lets the Dockerfile install dependencies in a layer
that changes only with pyproject.toml (standard library only)."""

import sys
import tomllib

with open(sys.argv[1], "rb") as f:
    project = tomllib.load(f)["project"]
extras = sys.argv[2:]
for req in (project["dependencies"] if not extras
            else [r for e in extras for r in project["optional-dependencies"][e]]):
    print(req)
