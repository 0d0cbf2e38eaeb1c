"""``python -m sinter COMMAND ...``: the tool's Python commands (sinter/cli.py), e.g. ``import``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
