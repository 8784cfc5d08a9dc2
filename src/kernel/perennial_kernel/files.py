"""A machine's files, as the kernel commands ``list_files``, ``read_file`` and ``write_file`` see
them: paths are the machine's own, relative to its working directory.
"""

import base64
import os


def list_files(path):
    """A folder's entries (the working directory when `path` is empty)."""
    folder = os.path.abspath(path or ".")
    entries = []
    with os.scandir(folder) as scan:
        for entry in scan:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            kind = "link" if entry.is_symlink() else "dir" if entry.is_dir(follow_symlinks=False) else "file"
            entries.append({"name": entry.name, "type": kind, "size": info.st_size, "mtime": info.st_mtime})
    entries.sort(key=lambda e: (e["type"] != "dir", e["name"]))
    return {"path": folder, "entries": entries}


def read_file(path, limit):
    """A file's bytes (base64), at most `limit` of them."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
        size = os.fstat(f.fileno()).st_size
    if len(data) > limit:
        raise ValueError(f"{path} is {size} bytes, more than the {limit} that can be read at once")
    return {"path": os.path.abspath(path), "size": size, "content": base64.b64encode(data).decode("ascii")}


def write_file(path, content):
    """Writes base64 `content` to `path`, making its folders."""
    data = base64.b64decode(content, validate=True)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return {"path": os.path.abspath(path), "size": len(data)}
