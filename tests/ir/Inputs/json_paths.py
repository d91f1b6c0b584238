#!/usr/bin/env python3
"""Reads one JSON document on stdin (failing if stdout held anything else) and prints every
leaf as `path = value`, one per line, sorted by path, for FileCheck: `stats.0.pass = "dce"`.
Lists also print their length (`stats.length = 3`)."""

import json
import sys


def walk(value, path, out):
    if isinstance(value, dict):
        for key, item in value.items():
            walk(item, f"{path}.{key}" if path else key, out)
    elif isinstance(value, list):
        out.append((f"{path}.length", str(len(value))))
        for index, item in enumerate(value):
            walk(item, f"{path}.{index}", out)
    else:
        out.append((path, json.dumps(value)))


def main() -> int:
    document = json.loads(sys.stdin.read())
    out = []
    walk(document, "", out)
    for path, value in sorted(out):
        print(f"{path} = {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
