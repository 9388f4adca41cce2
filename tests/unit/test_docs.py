import re
from pathlib import Path

from ops.config_table import DOCUMENT, render, settings_in
from pipeline.config import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def test_configuration_document_matches_settings():
    assert DOCUMENT.read_text() == render(), "run: python -m ops.config_table --write"
    assert "(docs/config.md)" in README.read_text()


def test_every_setting_is_in_one_group_and_the_user_table_stays_short():
    grouped = [name for group in Settings.groups() for name in group.model_fields]
    assert sorted(grouped) == sorted(Settings.model_fields)  # each once: no setting left out of the document
    assert settings_in("user") <= 60


def test_readme_gives_the_two_commands_and_ci_runs_the_test_one():
    text = README.read_text()
    assert "make run" in text and "make test" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "make test" in ci


def _documents() -> list[str]:
    """The README and every doc it links to."""
    text = README.read_text()
    linked = sorted(set(re.findall(r"\]\((docs/[\w-]+\.md)", text)))
    return [text] + [(README.parent / path).read_text() for path in linked]


def _curl_examples() -> set[tuple[str, str]]:
    """(method, path) of every curl command in the README and the docs it links."""
    found = set()
    for text in _documents():
        for line in text.replace("\\\n", " ").splitlines():
            for command in line.split(";"):
                if "curl " not in command:
                    continue
                method = re.search(r"-X (\w+)", command)
                method = method.group(1) if method else ("POST" if re.search(r" (-d|--data\S*) ", command) else "GET")
                for path in re.findall(r"\$\w+(/[^\s\"'?]*)", command):
                    found.add((method, path))
    return found


def _routes() -> set[tuple[str, str]]:
    from api.app import create_app
    from pipeline.config import Settings

    schema = create_app(Settings(automem_api_token="t")).openapi()
    routes = {(method.upper(), path) for path, operations in schema["paths"].items() for method in operations}
    return routes | {("POST", "/mcp")}  # mounted outside the schema


def test_every_route_has_a_curl_example_in_the_readme_or_a_linked_doc():
    examples = _curl_examples()
    literal = {path for _, path in _routes() if "{" not in path}
    missing = []
    for method, template in sorted(_routes()):
        pattern = re.compile("^" + re.sub(r"\\\{\w+\\\}", r"[^/]+", re.escape(template)) + "$")
        # an example of a literal route (/memory/by-tag) does not count for a templated one (/memory/{id})
        if not any(m == method and pattern.match(p) and (p == template or p not in literal) for m, p in examples):
            missing.append(f"{method} {template}")
    assert not missing, f"routes without a curl example: {missing}"
