#!/usr/bin/env python3
"""Checks the structure of `onnxc dump --format=dot` output read from stdin, without Graphviz:
every node id is declared once, every edge joins declared nodes. Prints the node and edge
counts, each cluster's label and node count, then `dangling edges: N`. tests/models imports
parse_dot for the model zoo's pictures."""

import re
import sys

NODE = re.compile(r'^\s*(\w+) \[(shape=[^,\]]+)')
EDGE = re.compile(r'^\s*(\w+) -> (\w+) \[')
CLUSTER = re.compile(r'^\s*subgraph (cluster_\d+) \{')
LABEL = re.compile(r'^\s*label="((?:[^"\\]|\\.)*)";')


def parse_dot(text: str) -> tuple:
    """(declared node ids, edges as (from, to), clusters as [label, node count])."""
    assert text.startswith("digraph "), "not a digraph"
    declared, edges, clusters = set(), [], []
    current = None
    for line in text.splitlines():
        if CLUSTER.match(line):
            current = [None, 0]
            clusters.append(current)
        elif current is not None and current[0] is None and LABEL.match(line):
            current[0] = LABEL.match(line).group(1)
        elif EDGE.match(line):
            edges.append(EDGE.match(line).groups())
        elif NODE.match(line):
            node = NODE.match(line).group(1)
            assert node not in declared, f"node {node} declared twice"
            declared.add(node)
            if current is not None:
                current[1] += 1
        elif line.strip() == "}":
            current = None
    return declared, edges, clusters


def main() -> int:
    declared, edges, clusters = parse_dot(sys.stdin.read())
    dangling = [e for e in edges if e[0] not in declared or e[1] not in declared]
    print(f"nodes: {len(declared)}, edges: {len(edges)}, clusters: {len(clusters)}")
    for label, count in clusters:
        print(f"cluster {label}: {count} nodes")
    print(f"dangling edges: {len(dangling)}")
    return 0 if not dangling else 1


if __name__ == "__main__":
    sys.exit(main())
