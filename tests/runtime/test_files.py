"""The one file writer (``runtime.files``) and what ``dslc fix --write``, ``compile -o``,
``--trace`` and the cache get from it: mode and owner kept, symlinks written through, hard
links kept, read-only files and concurrent edits refused, nothing lost on a failure.

Permission checks that root bypasses run a child process as ``nobody`` when the suite runs as
root (they are skipped where neither is possible)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.files import Snapshot, WriteError, ensure_directory, write_text

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_gets_the_mode_open_would_give(tmp_path):
    old = os.umask(0o022)
    try:
        write_text(tmp_path / "new.txt", "x")
    finally:
        os.umask(old)
    assert mode(tmp_path / "new.txt") == 0o644


def test_an_existing_file_keeps_its_mode(tmp_path):
    target = tmp_path / "shared.dsl"
    target.write_text("old")
    target.chmod(0o664)
    write_text(target, "new")
    assert target.read_text() == "new" and mode(target) == 0o664


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    real = tmp_path / "real.dsl"
    real.write_text("old")
    link = tmp_path / "link.dsl"
    link.symlink_to("real.dsl")
    assert write_text(link, "new") == real
    assert link.is_symlink() and os.readlink(link) == "real.dsl"
    assert real.read_text() == "new"


def test_a_hard_link_is_not_split(tmp_path):
    a = tmp_path / "a.dsl"
    a.write_text("old")
    b = tmp_path / "b.dsl"
    os.link(a, b)
    write_text(a, "new")
    assert b.read_text() == "new" and a.stat().st_ino == b.stat().st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.dsl", "b.dsl"]  # no temporary left


def test_a_read_only_file_is_refused_even_for_root(tmp_path):
    target = tmp_path / "ro.dsl"
    target.write_text("old")
    target.chmod(0o444)
    with pytest.raises(WriteError, match="the file is read-only; it was not changed"):
        write_text(target, "new")
    assert target.read_text() == "old" and mode(target) == 0o444


def test_a_file_changed_since_it_was_read_is_not_overwritten(tmp_path):
    target = tmp_path / "f.dsl"
    target.write_bytes(b"as read")
    seen = Snapshot.of_bytes(target, target.read_bytes())
    target.write_bytes(b"edited meanwhile")
    with pytest.raises(WriteError, match="changed since dslc read it"):
        write_text(target, "fixed", expected=seen)
    assert target.read_bytes() == b"edited meanwhile"
    write_text(target, "fixed", expected=Snapshot.of_bytes(target, b"edited meanwhile"))
    assert target.read_text() == "fixed"


def test_a_file_removed_since_it_was_read_is_not_recreated(tmp_path):
    target = tmp_path / "f.dsl"
    seen = Snapshot.of_bytes(target, b"x")
    with pytest.raises(WriteError, match="was removed since dslc read it"):
        write_text(target, "fixed", expected=seen)
    assert not target.exists()


def test_missing_directories_are_created_but_not_below_a_file(tmp_path):
    assert write_text(tmp_path / "a" / "b" / "c.json", "{}") == tmp_path / "a" / "b" / "c.json"
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(WriteError, match=r"f\.txt is not a directory"):
        write_text(tmp_path / "f.txt" / "sub" / "c.json", "{}")
    with pytest.raises(WriteError, match="it exists and is not a directory"):
        ensure_directory(tmp_path / "f.txt")
    with pytest.raises(WriteError, match="it is a directory"):
        write_text(tmp_path / "a", "{}")
    with pytest.raises(WriteError, match="empty path"):
        write_text("", "{}")


def test_a_failed_write_leaves_the_old_content_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "g.json"
    target.write_text("previous")

    def full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(WriteError, match="no space left on the device"):
        write_text(target, "new")
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["g.json"]


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_root_gives_a_rewritten_file_back_its_owner(tmp_path):
    target = tmp_path / "theirs.dsl"
    target.write_text("old")
    os.chown(target, NOBODY, NOBODY)
    write_text(target, "new")
    st = target.stat()
    assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY) and target.read_text() == "new"


def _as_nobody(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``argv`` as an unprivileged user (the suite's own user when it is not root)."""

    def drop():
        if os.geteuid() == 0:
            os.setgid(NOBODY)
            os.setuid(NOBODY)

    env = {**os.environ, "DSLC_CACHE_DIR": str(cwd / "cache"), "HOME": str(cwd)}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, preexec_fn=drop, timeout=120
    )


def _unprivileged_dir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    if os.geteuid() == 0:
        tmp_path.chmod(0o755)
        os.chown(work, NOBODY, NOBODY)
        try:
            probe = _as_nobody(
                [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); import dsl"], work
            )
        except PermissionError:
            pytest.skip(f"{sys.executable} cannot be run by an unprivileged user")
        if probe.returncode != 0:
            pytest.skip(f"the checkout is not readable by an unprivileged user: {probe.stderr[-200:]}")
    return work


def test_fix_write_as_an_unprivileged_user(tmp_path):
    """The reproducer of issue 14: mode kept, read-only refused, symlink written through, a
    read-only directory refused with E107, all without a traceback or an internal error."""
    work = _unprivileged_dir(tmp_path)
    fixture = (ROOT / "tests" / "fixtures" / "run" / "handshake_pre.dsl").read_text()
    for name in ("ro.dsl", "shared.dsl", "real.dsl"):
        (work / name).write_text(fixture)
    (work / "link.dsl").symlink_to("real.dsl")
    rodir = work / "rodir"
    rodir.mkdir()
    (rodir / "h.dsl").write_text(fixture)
    if os.geteuid() == 0:
        for p in [*work.iterdir(), rodir / "h.dsl"]:
            os.lchown(p, NOBODY, NOBODY)
    (work / "ro.dsl").chmod(0o444)
    (work / "shared.dsl").chmod(0o664)
    rodir.chmod(0o555)
    dslc = [
        sys.executable,
        "-c",
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); from dsl.driver.cli import main; sys.exit(main())",
    ]
    r = _as_nobody([*dslc, "fix", "--write", "ro.dsl", "shared.dsl", "link.dsl", "rodir/h.dsl"], work)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback" not in out and "internal error" not in out, out
    assert "ro.dsl: E107 the file is read-only; it was not changed" in out
    assert "rodir/h.dsl: E107 cannot create a file in rodir: permission denied" in out
    assert "fixed shared.dsl" in out and "fixed link.dsl" in out
    assert (work / "ro.dsl").read_text() == fixture and mode(work / "ro.dsl") == 0o444
    assert (work / "shared.dsl").read_text() != fixture and mode(work / "shared.dsl") == 0o664
    assert (work / "link.dsl").is_symlink() and (work / "real.dsl").read_text() != fixture
    assert (rodir / "h.dsl").read_text() == fixture
    compiled = _as_nobody([*dslc, "compile", "shared.dsl", "--target", "pypto", "-o", "rodir"], work)
    assert (
        compiled.returncode == 2
        and "E107 cannot create a file in rodir: permission denied" in compiled.stderr
    )
    rodir.chmod(0o755)


def test_fix_write_in_process_reports_each_file_and_goes_on(tmp_path, monkeypatch, capsys):
    """The same cases through ``dslc fix --write`` in this process: a directory where no file can
    be created (simulated: root may create files anywhere) is E107 and the other files are fixed."""
    from dsl.driver.cli import main

    fixture = (ROOT / "tests" / "fixtures" / "run" / "handshake_pre.dsl").read_text()
    for name in ("ro.dsl", "shared.dsl", "real.dsl"):
        (tmp_path / name).write_text(fixture)
    (tmp_path / "link.dsl").symlink_to("real.dsl")
    (tmp_path / "ro.dsl").chmod(0o444)
    (tmp_path / "shared.dsl").chmod(0o664)
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "h.dsl").write_text(fixture)
    import tempfile

    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and Path(dir).resolve() == blocked.resolve():
            raise PermissionError(13, "Permission denied")
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.chdir(tmp_path)
    code = main(["fix", "--write", "ro.dsl", "shared.dsl", "link.dsl", "blocked/h.dsl"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "ro.dsl: E107 the file is read-only; it was not changed (make it writable first)" in err
    assert "blocked/h.dsl: E107 cannot create a file in blocked: permission denied" in err
    assert "fixed shared.dsl" in out and "fixed link.dsl" in out
    assert "Traceback" not in out + err and "internal error" not in err
    assert (tmp_path / "ro.dsl").read_text() == fixture
    assert mode(tmp_path / "shared.dsl") == 0o664 and "after" in (tmp_path / "shared.dsl").read_text()
    assert (tmp_path / "link.dsl").is_symlink() and (tmp_path / "real.dsl").read_text() != fixture
    assert (blocked / "h.dsl").read_text() == fixture


def test_fix_write_keeps_a_byte_order_mark(tmp_path, capsys):
    from dsl.driver.cli import main

    fixture = (ROOT / "tests" / "fixtures" / "run" / "handshake_pre.dsl").read_text()
    target = tmp_path / "bom.dsl"
    target.write_bytes(b"\xef\xbb\xbf" + fixture.encode())
    assert main(["fix", "--write", str(target)]) == 0
    data = target.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and data[3:].decode() != fixture
