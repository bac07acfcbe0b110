"""`python -m helpers COMMAND`: the course's one command line (helpers.cli)."""

import sys

try:  # Ctrl-C while the course's modules are still importing ends as one pressed later does
    from helpers.cli import main
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
