import sys

from prover.cli import main

sys.exit(main())
