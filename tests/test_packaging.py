"""Packaging: the wheel built from this checkout, installed into a fresh venv outside it,
gives importable ``featagg_core`` / ``featagg_app``, the bundled samples and the dashboard
(``app.py`` + ``pages/``) from the installed files, and the console scripts ``featagg`` and
``featagg-dashboard``; and pyproject.toml / scripts/dashboard.sh agree with the code.

Nothing is downloaded: the wheel is built with ``--no-build-isolation`` (the project venv's
setuptools, pinned in requirements.txt) and installed with ``--no-deps --no-index`` into a
venv made with ``--without-pip`` whose only view of the dependencies is a ``.pth`` line
naming the project venv's site-packages. (``venv --system-site-packages`` would not do: a
venv made from the project venv's interpreter gets the *base* interpreter's site-packages,
not the project venv's.) Directories a ``.pth`` line adds are not scanned for ``.pth`` files
themselves, so an editable install of this checkout in the project venv stays out of it.
The project venv's dask and distributed are hidden (the ``[dask]`` extra is not installed).
"""
import ast
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: what the wheel is built from: the files pyproject.toml maps into packages
SOURCES = ["pyproject.toml", "README.md", "featagg_core", "featagg_app", "pages",
           "sample_data"]

pytestmark = pytest.mark.slow


def _build_backend_ok() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    return tuple(int(p) for p in setuptools.__version__.split(".")[:2]) >= (70, 1)


def _run(cmd, cwd, env, timeout=300):
    out = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, f"{cmd} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out


def _dependency_paths() -> list:
    """The folders this interpreter imports the dependencies from: its sys.path less the
    standard library and this checkout's own folders (the project venv's site-packages, and
    whatever its ``.pth`` files add; ``.venv/`` may be inside the checkout)."""
    stdlib = [Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "platstdlib")]
    venv = Path(sys.prefix).resolve()        # may lie inside the checkout (.venv/)
    keep = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        path = Path(entry).resolve()
        in_venv = path == venv or venv in path.parents
        if not in_venv and (path == ROOT or ROOT in path.parents):
            continue
        if any(path == s or s in path.parents for s in stdlib) and "-packages" not in entry:
            continue
        if entry not in keep:
            keep.append(entry)
    return keep


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv folder, environment, a working folder outside the checkout) with the wheel of
    this checkout installed in the venv."""
    assert _build_backend_ok(), (
        "building the wheel offline needs setuptools>=70.1 in the project venv "
        "(requirements.txt pins it; bash scripts/test.sh installs it)")
    base = tmp_path_factory.mktemp("packaging")
    # build from a copy: a build in the checkout leaves build/lib behind, whose stale files
    # (a module since moved or deleted) would end up in the next wheel
    src = base / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".featagg-cache")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    for script in ROOT.glob("*.py"):            # app.py (the "." package of pyproject.toml)
        shutil.copy2(script, src / script.name)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "--no-index", "-w", base / "dist", src], cwd=base, env=env)
    wheels = list((base / "dist").glob("featagg-*.whl"))
    assert len(wheels) == 1, wheels

    venv = base / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=base, env=env)
    py = venv / "bin" / "python"
    purelib = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   cwd=base, env=env).stdout.strip()
    (Path(purelib) / "_featagg_project_venv.pth").write_text(
        "".join(p + "\n" for p in _dependency_paths()))
    # a plain `pip install .` has no [dask] extra: hide the project venv's dask (the venv's
    # own site-packages comes first on sys.path), so nothing below may need it
    for module in ("dask", "distributed"):
        (Path(purelib) / f"{module}.py").write_text(
            f"raise ImportError('{module} is not installed (no [dask] extra)')\n")
    _run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--force-reinstall",
          wheels[0]], cwd=base, env=env)
    work = base / "elsewhere"
    work.mkdir()
    env = dict(env, PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
               FEATAGG_WARMUP="0")
    return venv, env, work


def test_imports_and_data_come_from_the_installed_package(installed):
    venv, env, work = installed
    probe = (
        "import json, featagg_core, featagg_app\n"
        "from featagg_core.data import samples\n"
        "from featagg_app.server import layout as _layout, serve\n"
        "print(json.dumps({'core': featagg_core.__file__, 'app_pkg': featagg_app.__file__,\n"
        "  'version': featagg_core.__version__, 'samples': samples.SAMPLE_DIR,\n"
        "  'files': [samples.sample_path(s.name) for s in samples.list_samples()\n"
        "            if samples.sample_path(s.name)],\n"
        "  'app': str(_layout.APP), 'in_checkout': _layout.IN_CHECKOUT,\n"
        "  'numba_cache': str(serve._numba_server_cache())}))\n")
    out = _run([venv / "bin" / "python", "-c", probe], cwd=work, env=env)
    got = json.loads(out.stdout)
    hidden = subprocess.run([venv / "bin" / "python", "-c", "import dask"], cwd=work, env=env,
                            capture_output=True, text=True)
    assert "no [dask] extra" in hidden.stderr
    site = str(venv)
    for key in ("core", "app_pkg", "samples", "app"):
        assert got[key].startswith(site), (key, got[key])     # not the checkout's files
    assert not got["core"].startswith(str(ROOT))
    assert got["version"] == __import__("featagg_core").__version__
    assert got["in_checkout"] is False
    assert "site-packages" not in got["numba_cache"]          # the user's cache, not the venv
    # every real sample's file shipped, byte for byte
    assert sorted(Path(p).name for p in got["files"]) == sorted(
        p.name for p in (ROOT / "sample_data").iterdir() if p.suffix in (".npz", ".parquet"))
    for p in got["files"]:
        assert Path(p).read_bytes() == (ROOT / "sample_data" / Path(p).name).read_bytes()
    # the installed app.py's page list names files that are beside it
    app = Path(got["app"])
    tree = ast.parse(app.read_text())
    pages = [n.elts[0].value for n in ast.walk(tree) if isinstance(n, ast.Tuple)
             and n.elts and isinstance(n.elts[0], ast.Constant)
             and str(n.elts[0].value).startswith("pages/")]
    assert len(pages) == 9 and all((app.parent / p).is_file() for p in pages), pages


def test_featagg_info_runs_from_anywhere(installed, capsys):
    venv, env, work = installed
    out = _run(["featagg", "info", "sample:bibtex"], cwd=work, env=env)
    assert shutil.which("featagg", path=env["PATH"]) == str(venv / "bin" / "featagg")
    info = json.loads(out.stdout)
    # Bibtex as published (XC repository split): 4,880 + 2,515 = 7,395 rows, 1,836 words,
    # 159 tags -- and the same summary the checkout's CLI prints
    assert (info["n"], info["n_test"], info["d"], info["L"]) == (4880, 2515, 1836, 159)
    from featagg_core.__main__ import main
    assert main(["info", "sample:bibtex"]) == 0
    assert info == json.loads(capsys.readouterr().out)


def test_featagg_dashboard_help(installed):
    venv, env, work = installed
    out = _run(["featagg-dashboard", "--help"], cwd=work, env=dict(env, PORT="8501"))
    text = " ".join(out.stdout.split())
    assert text.startswith("usage: featagg-dashboard")
    for option in ("--port PORT", "--public", "--max-load-mb MB", "--data-dir DIR"):
        assert option in text
    assert "default 8501" in text and "default 256" in text and "127.0.0.1" in text


def test_featagg_dashboard_starts_the_installed_server(installed):
    """``featagg-dashboard --port N`` from outside the checkout: the banner, then Streamlit
    serving the installed app.py on 127.0.0.1 (health check and the app's page)."""
    venv, env, work = installed
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = work / "dashboard.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(["featagg-dashboard", "--port", str(port)], cwd=work,
                                env=dict(env, FEATAGG_WARMUP="0"), stdout=fh,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        deadline, health = time.monotonic() + 90, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=5) as r:
                    health = r.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert health == "ok", log.read_text()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
            assert r.status == 200 and "<title>" in r.read().decode()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
    text = log.read_text()
    assert f"listening on http://127.0.0.1:{port} only (this machine)" in text
    assert "featagg-dashboard --public" in text        # the installed command, not dashboard.sh


def test_installed_dashboard_serves_home_and_data_pages(installed):
    """The installed app.py (AppTest, as a browser's first visit) shows Home, and its Data
    page shows Bibtex loaded from the installed sample files."""
    venv, env, work = installed
    script = (
        "import json\n"
        "from streamlit.testing.v1 import AppTest\n"
        "from featagg_app.server import layout as _layout\n"
        "at = AppTest.from_file(str(_layout.APP), default_timeout=180).run()\n"
        "home = {'exc': [e.value for e in at.exception], 'title': [t.value for t in at.title]}\n"
        "at.switch_page('pages/data.py').run()\n"
        "print(json.dumps({'home': home, 'exc': [e.value for e in at.exception],\n"
        "  'title': [t.value for t in at.title],\n"
        "  'metrics': {m.label: m.value for m in at.metric}}))\n")
    (work / "probe_app.py").write_text(script)
    out = _run([venv / "bin" / "python", "probe_app.py"], cwd=work, env=env, timeout=600)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["home"] == {"exc": [], "title": ["featagg"]}
    assert got["exc"] == [] and got["title"] == ["Data"]
    m = got["metrics"]
    assert (m["Points n (train)"], m["Test points"], m["Features d"], m["Labels L"]) == (
        "4,880", "2,515", "1,836", "159")


def test_every_package_folder_is_listed_in_pyproject():
    """pyproject.toml lists its packages (three of them are mapped from other folders, so
    setuptools' find cannot be used): a new package folder must be added there, or the wheel
    would ship without it."""
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for top in ("featagg_core", "featagg_app") for p in (ROOT / top).rglob("__init__.py")}
    missing = found - listed
    assert not missing, f"add {sorted(missing)} to [tool.setuptools] packages in pyproject.toml"
    mapped = PYPROJECT["tool"]["setuptools"]["package-dir"]
    for package in listed:
        folder = ROOT / mapped.get(package, package.replace(".", "/"))
        assert folder.is_dir(), (package, folder)


def test_dependencies_are_the_pins_as_compatible_ranges():
    """Each runtime dependency of pyproject.toml admits requirements.txt's pin."""
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (ROOT / "requirements.txt").read_text(),
                           re.M))
    project = PYPROJECT["project"]
    reqs = list(project["dependencies"])
    for group in ("dask", "test"):
        reqs += [r for r in project["optional-dependencies"][group]
                 if not r.startswith("featagg")]
    from packaging.requirements import Requirement
    names = set()
    for text in reqs:
        req = Requirement(text)
        names.add(req.name)
        assert req.name in pins, f"{req.name} is not pinned in requirements.txt"
        assert req.specifier.contains(pins[req.name]), (text, pins[req.name])
        assert any(s.operator == "<" for s in req.specifier), f"{text}: no upper bound"
    # every pinned runtime package is a dependency (the build tool is not one)
    assert set(pins) - names == {"setuptools"}


def test_dashboard_command_passes_dashboard_sh_options(monkeypatch):
    """``featagg-dashboard`` starts the server with the streamlit options, defaults and
    environment that ``scripts/dashboard.sh`` uses."""
    from featagg_app.server import serve
    script = (ROOT / "scripts" / "dashboard.sh").read_text()
    exec_line = script[script.index("exec .venv/bin/python -m featagg_app.server.serve"):]
    sh_options = dict(re.findall(r'(--[a-zA-Z]+\.[a-zA-Z]+) ("[^"]*"|\S+)', exec_line))
    for key in ("PORT", "FEATAGG_MAX_LOAD_MB", "FEATAGG_DATA_DIR", "FEATAGG_SESSION_TTL_S"):
        monkeypatch.delenv(key, raising=False)
    seen = []
    monkeypatch.setattr(serve, "main", seen.append)
    serve.dashboard([])
    argv = seen.pop()
    options = dict(zip(argv[::2], argv[1::2]))
    assert options.pop("--client.toolbarMode") == "viewer"   # .streamlit/config.toml's
    assert options == {
        "--server.port": "8501", "--server.address": "127.0.0.1",
        **{k: v for k, v in sh_options.items() if k not in ("--server.port", "--server.address",
                                                           "--server.disconnectedSessionTTL")},
        "--server.disconnectedSessionTTL": "60"}
    assert sh_options["--server.disconnectedSessionTTL"] == '"${FEATAGG_SESSION_TTL_S:-60}"'
    assert os.environ["FEATAGG_MAX_LOAD_MB"] == "256"

    serve.dashboard(["--public", "--port", "9001", "--max-load-mb", "64", "--data-dir", "/srv"])
    options = dict(zip(seen[-1][::2], seen[-1][1::2]))
    assert options["--server.address"] == "0.0.0.0" and options["--server.port"] == "9001"
    assert os.environ["FEATAGG_MAX_LOAD_MB"] == "64" and os.environ["FEATAGG_DATA_DIR"] == "/srv"
    serve.dashboard(["8600"])                                  # dashboard.sh's [PORT]
    assert dict(zip(seen[-1][::2], seen[-1][1::2]))["--server.port"] == "8600"
    monkeypatch.setenv("PORT", "8700")                         # and $PORT
    serve.dashboard([])
    assert dict(zip(seen[-1][::2], seen[-1][1::2]))["--server.port"] == "8700"
    # the options the usage text of dashboard.sh lists are the command's options
    usage = script[:script.index("source ")]
    parser_options = {o for a in serve.dashboard_parser()._actions for o in a.option_strings
                      if o.startswith("--") and o != "--help"}
    assert set(re.findall(r"--[a-z][a-z-]+", usage)) == parser_options
    serve.dashboard(["--data-dir", "datasets"])               # relative to the current folder
    assert os.environ["FEATAGG_DATA_DIR"] == os.path.abspath("datasets")
    for bad in (["--port", "http"], ["--port", "0"], ["--max-load-mb", "-1"]):
        with pytest.raises(SystemExit) as exc:
            serve.dashboard(bad)
        assert exc.value.code == 2
    monkeypatch.setenv("PORT", "eighty")
    with pytest.raises(SystemExit):
        serve.dashboard([])
