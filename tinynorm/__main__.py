"""``python -m tinynorm`` runs the command line (same as the ``tinynorm`` script)."""
from .cli import main

raise SystemExit(main())
