#!/usr/bin/env python3
"""Checks the `profile` object of `onnxc bench --profile --json` (stdin) for consistency, never
for times: per-op totals sorted and adding up to the total, steps per op adding up to the step
list, each step counted under its op. Prints one line per property that holds; raises on the first that fails."""

import json
import math
import sys


def main() -> int:
    document = json.loads(sys.stdin.read())
    for field in ("model", "latency_ms", "arena_bytes", "session_ms", "first_run_ms"):
        assert field in document, f"missing {field}"
    profile = document["profile"]
    print(f"profile runs = {profile['runs']}")
    ops, steps = profile["ops"], profile["steps"]
    assert ops and steps, "no ops or steps"
    assert [o["ms"] for o in ops] == sorted((o["ms"] for o in ops), reverse=True)
    assert math.isclose(sum(o["ms"] for o in ops), profile["total_ms"], rel_tol=1e-6, abs_tol=1e-9)
    assert sum(o["steps"] for o in ops) == len(steps)
    print("ops sorted by time, steps add up")
    assert [s["ms"] for s in steps] == sorted((s["ms"] for s in steps), reverse=True)
    per_op = {}
    for step in steps:
        op = step["name"].split(" ")[0]
        per_op[op] = per_op.get(op, 0) + 1
    assert per_op == {o["op"]: o["steps"] for o in ops}, f"steps by op {per_op}, ops {ops}"
    print("every step listed once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
