"""`python -m conveyor.cli`: the same as the `conveyor` console script."""

import sys

from conveyor.cli import main

sys.exit(main())
