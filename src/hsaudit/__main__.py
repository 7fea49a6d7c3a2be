import sys

from hsaudit.cli import main

sys.exit(main())
