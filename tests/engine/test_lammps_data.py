"""LAMMPS ``atom_style sphere`` data files (ecs_dem/io/lammps_data.py)."""
import numpy as np
import pytest

from ecs_dem.errors import InputError
from ecs_dem.io.lammps_data import read_sphere_data
from helpers import shared_file

SMALL = """LAMMPS data file via write_data, version 29 Sep 2021, timestep = 0

3 atoms
2 atom types

-1.0 2.0 xlo xhi
0 1 ylo yhi
0.5 4.5 zlo zhi

Masses

1 0.5
2 0.7

Atoms # sphere

3 2 0.2 2500 0.1 0.2 0.3 0 0 1
1 1 0.1 1000 1.5 0.5 1.0 0 0 0
2 1 0.1 1000 -0.5 0.25 4.0 -1 2 0

Velocities

2 0.0 -1.0 0.5 3 2 1
1 1.0 2.0 3.0 0.1 0.2 0.3
3 -4 -5 -6 7 8 9
"""


def write(tmp_path, text, name="small.data"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_small_file_with_velocities(tmp_path):
    d = read_sphere_data(write(tmp_path, SMALL))
    np.testing.assert_array_equal(d.box_lo, [-1.0, 0.0, 0.5])
    np.testing.assert_array_equal(d.box_hi, [2.0, 1.0, 4.5])
    # sorted by atom id, every column following its atom
    np.testing.assert_array_equal(d.id, [1, 2, 3])
    np.testing.assert_array_equal(d.type, [1, 1, 2])
    np.testing.assert_array_equal(d.diameter, [0.1, 0.1, 0.2])
    np.testing.assert_array_equal(d.radius, [0.05, 0.05, 0.1])
    np.testing.assert_array_equal(d.density, [1000, 1000, 2500])
    np.testing.assert_array_equal(d.position, [[1.5, 0.5, 1.0], [-0.5, 0.25, 4.0], [0.1, 0.2, 0.3]])
    np.testing.assert_array_equal(d.image, [[0, 0, 0], [-1, 2, 0], [0, 0, 1]])
    assert d.image.dtype == np.int64 and d.id.dtype == np.int64
    np.testing.assert_array_equal(d.velocity, [[1, 2, 3], [0, -1, 0.5], [-4, -5, -6]])
    np.testing.assert_array_equal(d.angular_velocity, [[0.1, 0.2, 0.3], [3, 2, 1], [7, 8, 9]])
    # mass = density * (pi/6) d^3, as LAMMPS sets it
    np.testing.assert_allclose(d.mass, d.density * np.pi / 6 * d.diameter**3, rtol=1e-15)
    assert d.mass[2] == pytest.approx(2500 * np.pi / 6 * 0.008, rel=1e-14)


def test_without_velocities_or_image_flags(tmp_path):
    text = ("header\n\n2 atoms\n0 1 xlo xhi\n0 1 ylo yhi\n0 1 zlo zhi\n\nAtoms\n\n"
            "2 1 1 1 0.5 0.5 0.5\n1 1 1 1 0.2 0.2 0.2\n")
    d = read_sphere_data(write(tmp_path, text))
    np.testing.assert_array_equal(d.id, [1, 2])
    np.testing.assert_array_equal(d.position[0], [0.2, 0.2, 0.2])
    assert np.all(d.image == 0) and d.image.shape == (2, 3)
    assert np.all(d.velocity == 0) and np.all(d.angular_velocity == 0)


def test_lammps_chute_data_file():
    d = read_sphere_data(shared_file("lammps-bench", "data.chute"))
    assert d.id.size == 32000
    np.testing.assert_array_equal(d.id, np.arange(1, 32001))
    assert int(np.sum(d.type == 2)) == 912
    assert int(np.sum(d.type == 1)) == 31088
    np.testing.assert_array_equal(d.box_lo, [0, 0, 0])
    np.testing.assert_array_equal(d.box_hi, [40, 20, 37.2886])
    assert np.all(d.diameter == 1.0)
    # The file's density column is 1 (not 1.9099 as the benchmark README says), so each mass
    # is pi/6. LAMMPS's own log confirms it: at step 0 it prints KinEng 784139.13 and
    # erotate/sphere 1601.1263, which these masses reproduce (with 1.9099 both would be 1.9x).
    assert np.all(d.density == 1.0)
    np.testing.assert_allclose(d.mass, np.pi / 6, rtol=1e-15)
    ke = 0.5 * np.sum(d.mass * np.sum(d.velocity**2, axis=1))
    inertia = 0.4 * d.mass * d.radius**2
    rot = 0.5 * np.sum(inertia * np.sum(d.angular_velocity**2, axis=1))
    assert f"{ke:.8g}" == "784139.13"
    assert f"{rot:.8g}" == "1601.1263"
    np.testing.assert_array_equal(d.image[0], [33, 0, 0])  # first atom line of the file


@pytest.mark.parametrize("edit, words", [
    (lambda s: s.replace("3 atoms", "4 atoms"), ["4 atoms", "3"]),
    (lambda s: s.replace("3 atoms\n", ""), ["atoms"]),
    (lambda s: s.replace("1.5 0.5 1.0 0 0 0", "1.5 0.5 1.0 0 0"), ["Atoms", "line 2"]),
    (lambda s: s.replace("1.5 0.5 1.0 0 0 0", "1.5 0.5 1.0 0 0 zero"), ["Atoms", "not numeric"]),
    (lambda s: s.replace("3 2 0.2 2500 0.1 0.2 0.3 0 0 1", "3 2 0.2 2500 0.1 0.2"),
     ["Atoms", "columns"]),
    (lambda s: s.replace("3 -4 -5 -6 7 8 9", "4 -4 -5 -6 7 8 9"), ["Velocities", "ids"]),
    (lambda s: s.replace("3 -4 -5 -6 7 8 9\n", ""), ["Velocities"]),
    (lambda s: s.replace("1 1.0 2.0 3.0 0.1 0.2 0.3", "1 1.0 2.0 3.0 0.1 0.2"),
     ["Velocities", "line 2"]),
])
def test_malformed_file_raises_input_error_naming_the_file(tmp_path, edit, words):
    path = write(tmp_path, edit(SMALL), "broken.data")
    with pytest.raises(InputError) as err:
        read_sphere_data(path)
    msg = str(err.value)
    assert "broken.data" in msg
    for w in words:
        assert w in msg, msg


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_sphere_data(tmp_path / "nope.data")
