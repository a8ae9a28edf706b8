"""`python -m render.diff a.py b.py [--hide-prose] [--color/--no-color]`: the neighbour diff in a terminal (see
render/terminal.py)."""

import sys

from render.terminal import main

if __name__ == "__main__":
    sys.exit(main())
