"""``python -m ecs_dem.run.triaxial``: the triaxial test (``driver.main``)."""
import sys

from .driver import main

sys.exit(main())
