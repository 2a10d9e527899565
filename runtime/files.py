"""Writing files without losing what was there: the one write helper of the whole project.

Every file dslc writes -- sources rewritten by ``dslc fix --write``, modules of ``dslc compile
-o``, ``dslc graph -o`` output, ``--trace`` JSON and the cache of generated kernels -- goes
through :func:`write_text` (or :func:`write_bytes`), so they all behave the same way:

- Missing directories of the path are created (``mkdir -p``); a part that is a file is an error.
- The new content goes to a temporary file in the target's directory, is flushed and
  fsynced, then renamed over the target: a crash or a full disk never leaves a truncated or
  half-written file.
- A symlink is followed: the file it points to is rewritten and the link stays a link.
- An existing file keeps its permission bits and, where the process may set them, its owner
  and group. A new file gets ``0666`` minus the umask, as ``open()`` would give it (never the
  ``0600`` of a temporary file).
- A file with several hard links, or whose owner the process cannot give back, is rewritten
  in place instead (after the temporary copy proved the content fits on the disk), so that
  every link sees the change and the owner stays. This is the one case that is not atomic.
- A read-only file (no write permission for this process, or no write bit at all -- root
  included) is refused, never replaced.
- With ``expected`` (a :class:`Snapshot` taken when the file was read), the write is refused
  if the file changed since: a concurrent edit is never silently overwritten.

Every failure is a :class:`WriteError` naming the path and the reason in words a user can act
on; the CLI reports it as a diagnostic (exit 2), never as an internal error.
"""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path


class WriteError(OSError):
    """A file could not be written; ``str()`` says which and why."""

    def __init__(self, path: str | Path, reason: str):
        super().__init__(f"cannot write {path}: {reason}")
        self.path = str(path)
        self.reason = reason


@dataclass(frozen=True)
class Snapshot:
    """What a file held when it was read: compared again just before it is rewritten."""

    path: str
    digest: str

    @staticmethod
    def of_bytes(path: str | Path, data: bytes) -> Snapshot:
        return Snapshot(str(path), hashlib.sha256(data).hexdigest())


def _reason(err: OSError) -> str:
    reasons = {
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EROFS: "the file system is read-only",
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EISDIR: "it is a directory",
        errno.ENOTDIR: "a part of the path is a file, not a directory",
        errno.ENAMETOOLONG: "the name is too long",
        errno.ENOENT: "a directory of the path does not exist",
        errno.ELOOP: "too many levels of symbolic links",
    }
    return reasons.get(err.errno or 0, err.strerror or str(err))


def ensure_directory(path: str | Path) -> Path:
    """Create ``path`` (and its parents) if needed; a WriteError if it cannot be a directory."""
    p = Path(path)
    if str(path) == "":
        raise WriteError("''", "an empty path names no directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise WriteError(p, "it exists and is not a directory") from None
    except NotADirectoryError:
        raise WriteError(p, f"{_file_in_the_way(p)} is a file, not a directory") from None
    except OSError as err:
        raise WriteError(p, _reason(err)) from None
    if not p.is_dir():
        raise WriteError(p, "it exists and is not a directory")
    return p


def _file_in_the_way(path: Path) -> Path:
    """The nearest existing ancestor of ``path`` (the file that stops ``mkdir -p``)."""
    for parent in [path, *path.parents]:
        if parent.exists():
            return parent
    return path


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_text(path: str | Path, text: str, *, expected: Snapshot | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` as described in the module docs; returns the file written."""
    return write_bytes(path, text.encode("utf-8"), expected=expected)


def write_bytes(path: str | Path, data: bytes, *, expected: Snapshot | None = None) -> Path:
    if str(path) == "":
        raise WriteError("''", "an empty path names no file")
    link = Path(path)
    try:
        target = Path(os.path.realpath(link)) if link.is_symlink() else link
    except OSError as err:
        raise WriteError(link, _reason(err)) from None
    if target.is_dir():
        raise WriteError(link, "it is a directory")
    parent = target.parent
    if not parent.is_dir():
        blocker = _file_in_the_way(parent)
        if not blocker.is_dir():
            raise WriteError(link, f"{blocker} is not a directory")
        try:
            ensure_directory(parent)
        except WriteError as err:
            raise WriteError(link, f"cannot create its directory {parent}: {err.reason}") from None
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    except OSError as err:
        raise WriteError(link, _reason(err)) from None
    if st is None and expected is not None:
        raise WriteError(link, "the file was removed since dslc read it; it was not written again")
    if st is not None:
        if not st.st_mode & 0o222 or not os.access(target, os.W_OK):
            raise WriteError(link, "the file is read-only; it was not changed (make it writable first)")
        if expected is not None and _digest(target) != expected.digest:
            raise WriteError(
                link, "the file changed since dslc read it; it was not overwritten (run the command again)"
            )
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    except OSError as err:
        raise WriteError(link, f"cannot create a file in {parent}: {_reason(err)}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        in_place = st is not None and (st.st_nlink > 1 or not _give_back_owner(tmp, st))
        if in_place:
            with open(target, "r+b") as f:
                f.truncate(0)
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        else:
            os.chmod(tmp, st.st_mode & 0o7777 if st is not None else _new_file_mode())
            os.replace(tmp, target)
    except OSError as err:
        raise WriteError(link, _reason(err)) from None
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target


def _give_back_owner(tmp: str, st: os.stat_result) -> bool:
    """Give the temporary file the old file's owner and group; False if the process may not."""
    made = os.stat(tmp)
    if (made.st_uid, made.st_gid) == (st.st_uid, st.st_gid):
        return True
    try:
        os.chown(tmp, st.st_uid, st.st_gid)
    except OSError:
        return False
    return True


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
