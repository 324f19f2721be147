"""``python -m coapcc`` is the ``coapcc`` command."""

import sys

from .cli import main

sys.exit(main())
