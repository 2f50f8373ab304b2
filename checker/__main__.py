import sys

from checker.cli import main

sys.exit(main())
