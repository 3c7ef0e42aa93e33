import sys

from prover.service.server import main

sys.exit(main())
