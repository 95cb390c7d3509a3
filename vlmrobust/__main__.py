import sys

from vlmrobust.cli import main

sys.exit(main())
