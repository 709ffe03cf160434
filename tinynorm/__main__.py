"""``python -m tinynorm`` runs the command line (same as the ``tinynorm`` script)."""
from .cli import main

if __name__ == "__main__":  # not when a spawned worker process imports it
    raise SystemExit(main())
