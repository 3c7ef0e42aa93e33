import sys

from proofflow.prover.cli import main

sys.exit(main())
