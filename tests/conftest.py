"""Shared fixtures. Helper functions live in tests/helpers.py (`from helpers import make_world`).

Tests mirror the code layout: tests/ecs_dem (engine), tests/components,
tests/systems (physics against analytic values), tests/run (drivers end to end).
"""
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)
