"""``python -m ember``: the ``ember`` command line (ember.cli)."""

import sys

from ember.cli import main

sys.exit(main())
