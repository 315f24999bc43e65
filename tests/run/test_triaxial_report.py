"""ecs_dem.run.triaxial.report on synthetic curves whose figures follow by hand: the summary's
peak, friction angle sin(phi) = sigma_d / (sigma_d + 2 sigma_c) and dilatancy
sin(psi) = -d eps_v/d eps / (2 - d eps_v/d eps); the model comparison's scatter and
difference of means."""
import math

import numpy as np
import pytest

from ecs_dem.run.triaxial.report import compare_models, main, summarise

EPS = np.linspace(0.0, 0.15, 301)


def synthetic(sigma_d, eps_v=None):
    n = EPS.size
    return {"phase": np.ones(n), "strain": EPS, "sigma_d": sigma_d,
            "volumetric_strain": np.zeros(n) if eps_v is None else eps_v}


def test_summary_of_a_curve_with_a_known_peak_and_dilation_rate():
    sigma_c = 1e5
    sd = 1.2e5 * np.exp(-((EPS - 0.08) / 0.05) ** 2)
    ev = 0.01 - 0.2 * EPS  # dilating at d eps_v / d eps = -0.2
    s = summarise(synthetic(sd, ev), sigma_c)
    assert s["peak_sigma_d"] == pytest.approx(1.2e5)
    assert s["strain_at_peak"] == pytest.approx(0.08)
    assert s["friction_angle"] == pytest.approx(math.degrees(math.asin(1.2e5 / 3.2e5)))
    assert s["dilatancy_angle"] == pytest.approx(math.degrees(math.asin(0.2 / 2.2)))


@pytest.mark.parametrize("offset, verdict", [(1e3, "within"), (8e3, "OUTSIDE")])
def test_models_agree_when_their_means_differ_less_than_the_seed_scatter(offset, verdict):
    base = 1e5 * np.tanh(EPS / 0.03)
    half = 2e3  # seeds 2 kPa either side: a scatter (rms of seed 1 - seed 2) of 4 kPa
    runs = {"small_patch_seed1": synthetic(base + half), "small_patch_seed2": synthetic(base - half),
            "small_particle_seed1": synthetic(base + offset + half),
            "small_particle_seed2": synthetic(base + offset - half)}
    (line,) = compare_models(runs)
    assert "patch 4.0 kPa (2 runs)" in line and "particle 4.0 kPa (2 runs)" in line
    assert f"particle mean {offset / 1e3:.1f} kPa: {verdict}" in line


def test_no_comparison_without_two_runs_of_each_model():
    runs = {"small_patch_seed1": synthetic(EPS), "small_patch_seed2": synthetic(EPS),
            "small_particle_seed1": synthetic(EPS)}
    assert compare_models(runs) == []


def test_a_file_that_is_not_a_triaxial_output_is_an_error_not_a_traceback(tmp_path, capsys):
    """Another driver's output (vector time-series columns) was a TypeError from the CSV
    writer; a file that is not HDF5 was an OSError traceback."""
    import h5py

    pour = tmp_path / "pour.h5"
    with h5py.File(pour, "w") as f:
        f["timeseries/step"] = np.arange(3)
        f["timeseries/force_top"] = np.zeros((3, 3))
    assert main([str(pour)]) == 2
    assert "not a triaxial run's output (its time series has no sigma_d)" in capsys.readouterr().err
    text = tmp_path / "run.xdmf"
    text.write_text("<Xdmf/>")
    assert main([str(text)]) == 2
    assert "run.xdmf cannot be read as HDF5" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pour.h5", "run.xdmf"]  # no CSV
