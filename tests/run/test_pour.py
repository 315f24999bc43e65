"""run/pour.py's input checks (the pour itself runs in tests/engine/test_soft_kill.py and the
MPI scenarios)."""
from helpers import load_driver


def test_an_output_that_names_no_file_is_an_input_error(tmp_path, capsys, monkeypatch):
    """output= made the checkpoint's name from an empty path: a ValueError traceback."""
    monkeypatch.chdir(tmp_path)
    pour = load_driver("pour")
    for output in ("", "."):
        assert pour.main(["--set", f"output={output}"]) == 2
        assert "is a directory: choose a file name" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written
