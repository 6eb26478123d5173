import sys

from offload_cli.main import main

sys.exit(main())
