"""run/membrane_drop.py's input: the ``radii`` list is parsed with an error that names the key
and the form it takes."""
import numpy as np
import pytest

from ecs_dem.errors import InputError
from helpers import load_driver


def test_radii_are_positive_numbers_separated_by_commas():
    drop = load_driver("membrane_drop")
    np.testing.assert_array_equal(drop.grain_radii("1.5e-3, 2.5e-3,4e-3"), [1.5e-3, 2.5e-3, 4e-3])
    for bad in ("a,b", "nan", "-1e-3,2e-3", "", "1e-3,,2e-3"):
        with pytest.raises(InputError, match="config key 'radii'"):
            drop.grain_radii(bad)
