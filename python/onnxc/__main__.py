"""`python -m onnxc ARGS...`: the onnxc command line (python/onnxc/_cli.py)."""

from ._cli import main

if __name__ == "__main__":
    main()
