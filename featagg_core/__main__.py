"""``python -m featagg_core``: the ``featagg`` command line (:mod:`featagg_core.cli.main`)."""
import sys

from featagg_core.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
