"""``python -m mcec``: the same as the ``mcec`` command."""

from mcec.cli import main

raise SystemExit(main())
