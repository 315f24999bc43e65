"""Shared fixtures. Helper functions live in tests/helpers.py (`from helpers import make_world`).

Tests mirror the code layout: tests/engine (ecs_dem/), tests/components,
tests/systems (physics against analytic values), tests/run (drivers end to end).
"""
import numpy as np
import pytest

from ecs_dem import declaration_guard

# Every World the suite builds in its own processes (serial, and under mpiexec) checks its
# systems against their declarations (ecs_dem.declaration_guard). Drivers the tests start as
# subprocesses run at full speed, as users run them.
declaration_guard.DEFAULT = True


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)
