"""``python -m agentmonad``: the runtime's command line (:mod:`agentmonad.cli`)."""

import sys

from agentmonad.cli import main

sys.exit(main())
