import sys

from railings.cli import main

sys.exit(main())
