"""The web refuses to start without a token wherever its real bind is not loopback, however given."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys

import pytest

from api.app import create_app
from api.bind import Bind, served_bind, unauthenticated_exposure, uvicorn_cli_bind
from ops.redis_servers import free_port, port_open
from pipeline.config import Settings
from pipeline.errors import ConfigurationError
from ops.bench.stack import ROOT

pytestmark = pytest.mark.security  # pytest -m security: the security suite (docs/testing.md)

UVICORN = "/venv/bin/uvicorn"
PYTHON_M_UVICORN = "/venv/lib/python3.11/site-packages/uvicorn/__main__.py"
APP = ["api.app:create_app", "--factory"]


@pytest.mark.parametrize("program", [UVICORN, PYTHON_M_UVICORN])
@pytest.mark.parametrize("args, host", [
    (["--host", "0.0.0.0"], "0.0.0.0"),
    (["--host=::"], "::"),
    (["--port", "8001"], "127.0.0.1"),  # uvicorn's own default
    (["--host", "127.0.0.1"], "127.0.0.1"),
])
def test_the_uvicorn_command_line_names_the_bind(program, args, host):
    assert uvicorn_cli_bind([program, *APP, *args]).host == host


def test_uvicorn_host_from_its_environment_variable(monkeypatch):
    monkeypatch.setenv("UVICORN_HOST", "0.0.0.0")
    bind = uvicorn_cli_bind([UVICORN, *APP])
    assert bind == Bind("0.0.0.0", "UVICORN_HOST=0.0.0.0")


@pytest.mark.parametrize("address, loopback", [("::ffff:127.0.0.1", True), ("::ffff:10.0.0.5", False)])
def test_a_dual_stack_socket_sees_ipv4_loopback_mapped(address, loopback):
    assert Bind(address, "x").local_only is loopback


def test_a_unix_socket_is_local():
    bind = uvicorn_cli_bind([UVICORN, *APP, "--host", "0.0.0.0", "--uds", "/tmp/mempipe.sock"])
    assert bind.host is None and bind.local_only


def test_an_inherited_socket_is_read_for_its_address():
    with socket.socket() as public, socket.socket() as local:
        public.bind(("0.0.0.0", 0))
        local.bind(("127.0.0.1", 0))
        assert uvicorn_cli_bind([UVICORN, *APP, "--fd", str(public.fileno())]).host == "0.0.0.0"
        assert uvicorn_cli_bind([UVICORN, *APP, "--fd", str(local.fileno())]).local_only
        public.getsockname()  # still open: the check never closes the server's descriptor


def test_other_programs_fall_back_to_the_host_setting():
    assert uvicorn_cli_bind(["/venv/bin/pytest", "--host", "0.0.0.0"]) is None
    settings = Settings(host="0.0.0.0", automem_api_token="t")
    assert served_bind(settings, ["/venv/bin/gunicorn"]) == Bind("0.0.0.0", "HOST=0.0.0.0")


def test_refusal_names_how_the_bind_was_given_and_the_token():
    settings = Settings()  # HOST 127.0.0.1, no token: the setting alone would pass
    refusal = unauthenticated_exposure(served_bind(settings, [UVICORN, *APP, "--host", "0.0.0.0"]), settings)
    assert refusal and "uvicorn --host 0.0.0.0" in refusal and "AUTOMEM_API_TOKEN" in refusal
    assert unauthenticated_exposure(Bind("0.0.0.0", "x"), Settings(automem_api_token="t")) is None
    assert unauthenticated_exposure(Bind("127.0.0.1", "x"), settings) is None


def test_create_app_refuses_a_public_uvicorn_bind_without_a_token(monkeypatch):
    monkeypatch.setattr(sys, "argv", [UVICORN, *APP, "--host", "0.0.0.0", "--port", "8001"])
    with pytest.raises(ConfigurationError, match="AUTOMEM_API_TOKEN"):
        create_app(Settings())
    create_app(Settings(automem_api_token="chosen"))  # with a token it builds


@pytest.mark.parametrize("args, env", [
    (["--host", "0.0.0.0"], {}),  # as the Procfile and the Docker image start it
    ([], {"UVICORN_HOST": "0.0.0.0"}),
])
def test_uvicorn_exits_before_listening(args, env):
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if k not in ("AUTOMEM_API_TOKEN", "ADMIN_API_TOKEN", "HOST")}
    environ.update(env)
    done = subprocess.run([sys.executable, "-m", "uvicorn", *APP, "--port", str(port), *args], cwd=ROOT,
                          env=environ, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "refusing to start" in done.stderr and "set AUTOMEM_API_TOKEN" in done.stderr, done.stderr[-2000:]
    assert not port_open("127.0.0.1", port)


def _shipped_web_commands() -> dict[str, list[str]]:
    procfile = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    dockerfile = next(line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("CMD "))
    return {
        "Procfile": shlex.split(procfile.removeprefix("web:").replace("${PORT:-8001}", "8001")),
        "Dockerfile": json.loads(dockerfile.removeprefix("CMD ")),
    }


@pytest.mark.parametrize("name", ["Procfile", "Dockerfile"])
def test_the_shipped_web_commands_are_seen_and_refused_without_a_token(name):
    # They bind every interface; the check must see that from their own command line.
    argv = _shipped_web_commands()[name]
    assert argv[0] == "uvicorn"
    bind = served_bind(Settings(), argv)
    assert bind.host == "0.0.0.0"
    assert "AUTOMEM_API_TOKEN" in unauthenticated_exposure(bind, Settings())
