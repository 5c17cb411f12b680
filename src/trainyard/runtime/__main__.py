"""`python3 -m trainyard.runtime launch|run|free-port|slurm-hosts ...`"""

import sys

from trainyard.runtime.cli import main

sys.exit(main())
