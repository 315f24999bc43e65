"""The triaxial test with a flexible membrane (Goetz & Poeschel 2023, Sect. 3.1).

Run it as::

    python -m ecs_dem.run.triaxial [--case small|1|2] [--model patch|particle] [--set key=value ...]
    python -m ecs_dem.run.triaxial.report output/triaxial/<run>.h5   # curves and summary again

Its modules::

    driver           the test: configuration, sample, membrane, platens, the run
                     (its docstring gives the materials and the choices)
    preparation      the sample: a random packing without overlaps, cached per case and seed
    control          loading and measurement: phases, equilibrium, how each stress is measured
    report           a run's CSV, each case's summary table and plots

The package's attributes are the driver's (``triaxial.DEFAULTS``, ``triaxial.main``), read
from ``driver`` when first asked for: importing the package alone loads nothing, so
``python -m ecs_dem.run.triaxial.report`` runs the report without the engine.
"""


import importlib


def __getattr__(name: str):
    if name.startswith("__") or name in ("driver", "preparation", "control", "report"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.driver"), name)
