"""run/pour.py's input checks (the pour itself runs in tests/engine/test_soft_kill.py and the
MPI scenarios)."""
import shutil
import subprocess

import pytest

from helpers import PYTHON, REPO, load_driver


def test_an_output_that_names_no_file_is_an_input_error(tmp_path, capsys, monkeypatch):
    """output= made the checkpoint's name from an empty path: a ValueError traceback."""
    monkeypatch.chdir(tmp_path)
    pour = load_driver("pour")
    for output in ("", "."):
        assert pour.main(["--set", f"output={output}"]) == 2
        assert "is a directory: choose a file name" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="needs Debian's MPICH")
def test_on_two_ranks_a_bad_key_is_printed_once_and_a_missing_file_by_each_rank(tmp_path):
    def stderr(*args):
        res = subprocess.run(["mpiexec.mpich", "-n", "2", PYTHON, str(REPO / "run" / "pour.py"),
                              *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert res.returncode == 2, res.stderr
        return res.stderr  # the ranks' lines may run together: count the messages

    assert stderr("--set", "bogus=1").count("error: unknown config key 'bogus'") == 1
    assert stderr("--config", "missing.toml").count(
        "error: config file missing.toml does not exist") == 2
