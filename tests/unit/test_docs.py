from pathlib import Path

from ops.config_table import BEGIN, END, render

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_configuration_table_matches_settings():
    text = README.read_text()
    table = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert table == render(), "run: python -m ops.config_table --write"


def test_readme_gives_the_two_commands_and_ci_runs_the_test_one():
    text = README.read_text()
    assert "make run" in text and "make test" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "make test" in ci
