import sys

from proofflow.prover.service.server import main

sys.exit(main())
