"""`python -m pypto.tools.memory_map`: see the package docstring."""

import sys

from . import main

sys.exit(main())
