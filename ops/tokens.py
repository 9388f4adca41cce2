"""The embedded default's tokens: chosen in the environment, else generated once and kept private.

``tokens.json`` holds both tokens in clear, so no moment may exist where another user can read
it: it is written to a new file created with mode 0600 and renamed over the old one (a file
created and then chmod'ed is readable in between, with the umask's mode), and one found with a
wider mode is narrowed before it is read.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from pathlib import Path

TOKEN_NAMES = ("AUTOMEM_API_TOKEN", "ADMIN_API_TOKEN")
PRIVATE = 0o600


def new_token() -> str:
    """A fresh secret token: 192 random bits in hex. Not URL-safe base64, whose tokens start with
    ``-`` one time in 64 and are then read as an option (``--token -x…``) by a command line."""
    return secrets.token_hex(24)


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``, never readable beyond its owner."""
    scratch = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
        os.replace(scratch, path)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise


def _read_private(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    if stat.S_IMODE(path.stat().st_mode) & ~PRIVATE:
        path.chmod(PRIVATE)  # an older launcher (or a copy) left it readable by others
    return json.loads(path.read_text())


def load_or_create_tokens(data_dir: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Each token from the environment, else from ``tokens.json``, else new; kept in ``tokens.json``."""
    environ = os.environ if environ is None else environ
    path = data_dir / "tokens.json"
    stored = _read_private(path)
    tokens = {name: environ.get(name) or stored.get(name) or new_token() for name in TOKEN_NAMES}
    if tokens != stored:
        write_private(path, json.dumps(tokens, indent=2))
    return tokens
