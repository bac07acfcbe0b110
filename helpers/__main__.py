"""`python -m helpers COMMAND`: the course's one command line (helpers.cli)."""

import sys

from helpers.cli import main

sys.exit(main())
