"""``python -m connectd``: the ``connectd`` command (``connectd cluster run`` starts its workers so)."""

import sys

from connectd.cli import main

sys.exit(main())
