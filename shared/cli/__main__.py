"""`python -m shared.cli`: the `cairn` command."""

import sys

from shared.cli.main import main

sys.exit(main())
