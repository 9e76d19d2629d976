"""Issue 33, R9 / R10 and the smaller command-line items: ``--out`` never replaces a device
node, a FIFO or a folder, nor any of the command's inputs (exit status 2, the target left
as it was); files get the user's umask; errors name the file asked for (never the
temporary file); ``info`` refuses a FIFO instead of blocking; a closed pipe ends quietly;
no Python class name in a message; a MULAN XML in an encoding expat refuses is blamed,
not its ARFF. Never touches the real /dev/null: the device node is made in tmp_path."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from featagg_core.cli.main import main
from featagg_core.data import save_xc
from featagg_core.data.synthetic import make_powerlaw_multilabel, make_zipf_categorical
from hostile_helpers import PY, ROOT, child_env


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A tiny multi-label file, a table and a model trained on the first."""
    root = tmp_path_factory.mktemp("cli")
    save_xc(make_powerlaw_multilabel(120, 40, 6, random_state=1), root / "in.txt")
    t = make_zipf_categorical(n_rows=300, n_columns=3, n_values=20, random_state=0)
    frame = t.table.copy()
    frame["y"] = t.labels
    frame.to_csv(root / "t.csv", index=False)
    code = main(["train", str(root / "in.txt"), "--out", str(root / "model.fgz")])
    assert code == 0 and (root / "model.fgz").is_file()
    return root


def _snapshot(path):
    st = os.lstat(path)
    body = open(path, "rb").read() if stat.S_ISREG(st.st_mode) else None
    return stat.S_IFMT(st.st_mode), st.st_ino, body


def _commands(root, out):
    return {
        "agglomerate": ["agglomerate", root / "in.txt", "--d0", "4", "--out", out],
        "train": ["train", root / "in.txt", "--out", out],
        "triage": ["triage", root / "in.txt", "--out", out],
        "compress": ["compress", root / "t.csv", "--label", "y", "--budget", "4", "--out", out],
        "predict": ["predict", root / "model.fgz", root / "in.txt", "--out", out],
        "select-features": ["select-features", "sample:cora", "--out", out],
    }


@pytest.mark.parametrize("command", ["agglomerate", "train", "triage", "compress", "predict",
                                     "select-features"])
def test_out_refuses_a_fifo(capsys, files, tmp_path, command):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    before = _snapshot(fifo)
    code, out, err = run(capsys, *_commands(files, fifo)[command])
    assert code == 2 and "pipe (FIFO)" in err and str(fifo) in err, err
    assert _snapshot(fifo) == before and not list(tmp_path.glob(".tmp-*"))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="making a device node needs root")
@pytest.mark.parametrize("command", ["agglomerate", "compress"])
def test_out_refuses_a_device_node(capsys, files, tmp_path, command):
    """R9: as root the atomic write os.replace'd a device with a regular file (--out
    /dev/null destroyed /dev/null); here a null device of our own in tmp_path."""
    dev = tmp_path / "null"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    before = _snapshot(dev)
    code, out, err = run(capsys, *_commands(files, dev)[command])
    assert code == 2 and "device" in err, err
    assert _snapshot(dev) == before and stat.S_ISCHR(os.lstat(dev).st_mode)


@pytest.mark.parametrize("command,target", [
    ("agglomerate", "in.txt"), ("train", "in.txt"), ("triage", "in.txt"),
    ("compress", "t.csv"), ("predict", "model.fgz"), ("predict", "in.txt")])
def test_out_refuses_an_input_file(capsys, files, command, target):
    """R10: --out naming one of the command's inputs (as given, through another spelling
    of the path, or a hard link to it) is refused before anything runs."""
    path = files / target
    before = _snapshot(path)
    for spelling in (path, files / "." / target):
        code, out, err = run(capsys, *_commands(files, spelling)[command])
        assert code == 2 and "is the input file" in err, err
    link = files / f"link-{command}-{target}"
    os.link(path, link)
    try:
        code, out, err = run(capsys, *_commands(files, link)[command])
        assert code == 2 and "is the input file" in err, err
    finally:
        os.unlink(link)
    assert _snapshot(path) == before


def test_out_refuses_a_folder_without_naming_the_temporary_file(capsys, files, tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    code, out, err = run(capsys, *_commands(files, folder)["compress"])
    assert code == 2 and "is a folder" in err and ".tmp-" not in err, err
    code, out, err = run(capsys, *_commands(files, tmp_path / "no" / "x.json")["compress"])
    assert code == 2 and str(tmp_path / "no" / "x.json") in err and ".tmp-" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_atomic_write_refuses_special_files_itself(tmp_path):
    """The shared writer (every --out, save_npz, save_xc, the caches) checks its target
    too, not only the command line's early check."""
    from featagg_core.data import _atomic_write
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as info:
        _atomic_write(fifo, lambda fh: fh.write(b"x"))
    assert info.value.filename == str(fifo) and "FIFO" in info.value.strerror
    with pytest.raises(OSError) as info:
        _atomic_write(tmp_path, lambda fh: fh.write(b"x"))
    assert info.value.filename == str(tmp_path)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and sorted(os.listdir(tmp_path)) == ["p"]


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_files_get_the_users_umask(capsys, files, tmp_path, mask):
    old = os.umask(mask)
    try:
        code, out, err = run(capsys, *_commands(files, tmp_path / "m.json")["compress"])
        assert code == 0, err
        assert stat.S_IMODE(os.stat(tmp_path / "m.json").st_mode) == 0o666 & ~mask
        # replacing a file keeps that file's mode
        os.chmod(tmp_path / "m.json", 0o604)
        code, out, err = run(capsys, *_commands(files, tmp_path / "m.json")["compress"])
        assert code == 0 and stat.S_IMODE(os.stat(tmp_path / "m.json").st_mode) == 0o604
    finally:
        os.umask(old)


def test_info_refuses_a_fifo_instead_of_blocking(files, tmp_path):
    fifo = tmp_path / "data.txt"
    os.mkfifo(fifo)
    out = subprocess.run([PY, "-m", "featagg_core", "info", str(fifo)], capture_output=True,
                         text=True, timeout=120, env=child_env(), cwd=str(ROOT))
    assert out.returncode == 2 and "pipe (FIFO)" in out.stderr, out.stderr


def test_info_into_a_closed_pipe_ends_quietly(files):
    """``featagg info ... | head -c1``: the reader is gone before the JSON is written."""
    p = subprocess.Popen([PY, "-m", "featagg_core", "info", str(files / "in.txt")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(),
                         cwd=str(ROOT))
    p.stdout.close()                       # before the child has imported anything
    err = p.stderr.read().decode()
    code = p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception" not in err, err
    assert code == 0, err


@pytest.mark.parametrize("exc", [RecursionError("maximum recursion depth exceeded"),
                                 __import__("zipfile").BadZipFile("File is not a zip file"),
                                 KeyError("X")])
def test_messages_name_no_python_class(capsys, monkeypatch, files, exc):
    def boom(args):
        raise exc
    monkeypatch.setattr("featagg_core.cli.info.cmd_info", boom)
    code, out, err = run(capsys, "info", files / "in.txt")
    assert code == 2 and err.startswith("featagg: error: ") and len(err.splitlines()) == 1
    for name in ("RecursionError", "BadZipFile", "KeyError", "Traceback"):
        assert name not in err, err


def test_info_on_a_damaged_npz_names_no_class(capsys, tmp_path):
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"PK\x03\x04" + b"\x00" * 60)
    code, out, err = run(capsys, "info", bad)
    assert code == 2 and "BadZipFile" not in err and str(bad) in err, err


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_mulan_xml_in_a_multibyte_encoding_is_blamed_not_its_arff(capsys, tmp_path, encoding):
    arff = ["@relation tiny", "@attribute f0 numeric", "@attribute f1 numeric",
            "@attribute a {0,1}", "@attribute b {0,1}", "@data", "1,2,0,1", "0,3,1,1"]
    (tmp_path / "s.arff").write_text("\n".join(arff) + "\n")
    xml = (f'<?xml version="1.0" encoding="{encoding.upper()}"?><labels xmlns="http://mulan.'
           'sourceforge.net/labels"><label name="a"/><label name="b"/></labels>')
    (tmp_path / "s.xml").write_bytes(xml.encode(encoding))
    code, out, err = run(capsys, "info", tmp_path / "s.arff")
    assert code == 2 and f"{tmp_path / 's.xml'}:" in err and "s.arff:" not in err, err
    assert "UTF-8" in err


def test_a_fifo_given_to_a_reader_does_not_block_it(tmp_path):
    """A path that is a FIFO given to a reader (here an ARFF's label XML): every reader
    refuses a path that is not a regular file instead of blocking on it."""
    arff = ["@relation tiny", "@attribute f0 numeric", "@attribute a {0,1}",
            "@attribute b {0,1}", "@data", "1,0,1", "0,1,1"]
    (tmp_path / "s.arff").write_text("\n".join(arff) + "\n")
    os.mkfifo(tmp_path / "s.xml")
    code = ("from featagg_core.data import load_dataset, DatasetError\n"
            "try:\n    load_dataset(%r, xml=%r)\nexcept DatasetError as e:\n"
            "    print('refused:', e)\n" % (str(tmp_path / "s.arff"), str(tmp_path / "s.xml")))
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120,
                         env=child_env(), cwd=str(ROOT))
    assert "refused:" in out.stdout and "s.xml" in out.stdout and "FIFO" in out.stdout, \
        (out.stdout, out.stderr[-1000:])
