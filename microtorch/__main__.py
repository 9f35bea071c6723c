"""``python -m microtorch``: the same command as the ``microtorch`` console script."""

import sys

from .cli import main

sys.exit(main())
