"""``python -m railings``: the ``railings`` command line."""

import sys

from railings.cli import main

sys.exit(main())
