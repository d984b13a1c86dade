"""How to install one of kvspec's optional extras (pyproject.toml: plot, hunt, cluster), said for the
installation at hand, as the installer recorded it in the distribution's direct_url.json (the
packaging spec "Recording the Direct URL Origin of installed distributions", PEP 610): none for an
install from an index (PyPI: `kvspec[plot]`); a folder for a checkout (`.` where it is the working
folder; `-e` if it was installed editable); an archive, a URL or a repository at its commit
otherwise. The installer is the running interpreter's: its `pip` where that is the one on PATH,
else `python -m pip` by its path; `uv pip` where uv installed kvspec (INSTALLER)."""

import json
import os
import shlex
import shutil
import site
import sys
import sysconfig
from importlib.metadata import PackageNotFoundError, distribution, distributions
from urllib.parse import unquote, urlsplit


def install_hint(extra: str) -> str:
    """The command that installs ``extra`` into the kvspec that is running."""
    return f"{installer()} {requirement(extra, json.loads(recorded('direct_url.json') or 'null'))}"


def recorded(file: str) -> str | None:
    """A file the installer wrote beside kvspec's metadata (direct_url.json, INSTALLER), or None.
    The metadata is looked for where the environment's installer puts it first: in a checkout, the
    working folder's kvspec.egg-info (setuptools' build leaves it) comes first on sys.path under
    `python -m` and pytest, and records no installation."""
    places = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], site.getusersitepackages()]
    for installed in distributions(name="kvspec", path=places):
        return installed.read_text(file)
    try:
        return distribution("kvspec").read_text(file)
    except PackageNotFoundError:
        return None


def installer() -> str:
    """The install command of the environment kvspec runs in."""
    python = shlex.quote(sys.executable)
    if (recorded("INSTALLER") or "").strip() == "uv":
        return f"uv pip install --python {python}"  # uv leaves no pip in the environments it makes
    on_path = shutil.which("pip")
    if on_path is not None and os.path.dirname(on_path) == os.path.dirname(sys.executable):  # its environment is the one activated
        return "pip install"
    return f"{python} -m pip install"


def requirement(extra: str, origin: dict[str, object] | None) -> str:
    """What to give the installer for kvspec with ``extra``, installed from ``origin`` (direct_url.json's content)."""
    url = str((origin or {}).get("url", ""))
    if origin is None or not url:
        return shlex.quote(f"kvspec[{extra}]")
    local = unquote(urlsplit(url).path) if url.startswith("file://") else None
    folder = origin.get("dir_info")
    if local is not None and isinstance(folder, dict):
        editable = "-e " if folder.get("editable") else ""
        return editable + shlex.quote(f"{'.' if is_working_folder(local) else local}[{extra}]")
    if local is not None and "archive_info" in origin:
        return shlex.quote(f"{local}[{extra}]")
    vcs = origin.get("vcs_info")
    if isinstance(vcs, dict):
        url = f"{vcs['vcs']}+{url}@{vcs['commit_id']}"
    return shlex.quote(f"kvspec[{extra}] @ {url}")


def is_working_folder(folder: str) -> bool:
    try:
        return os.path.samefile(folder, os.getcwd())
    except OSError:  # the folder or the working folder is gone
        return False
