"""CONVEYOR_DOCUMENTS_URL: which store documents go to, checked without touching it.

    postgresql              the Conveyor database itself (the default)
    file:///srv/documents   a local or shared folder (NFS, a mounted bucket, a Volume)
    s3://bucket/prefix      an object store through fsspec: s3:// (extra s3),
    gs://bucket/prefix      gs:// or gcs:// (extra gcs), abfs://, abfss:// or az://
    abfs://container/prefix (extra azure); credentials come from each SDK's usual chain

The canonical text (no trailing slash, an absolute folder) is what the `documents.store`
column records, so that every reader finds the same store by the same name.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

VARIABLE = "CONVEYOR_DOCUMENTS_URL"
POSTGRESQL = "postgresql"

# scheme -> (the extra that installs its fsspec backend, the module that backend is)
OBJECT_STORES = {
    "s3": ("s3", "s3fs"),
    "gs": ("gcs", "gcsfs"),
    "gcs": ("gcs", "gcsfs"),
    "abfs": ("azure", "adlfs"),
    "abfss": ("azure", "adlfs"),
    "az": ("azure", "adlfs"),
}


class BadStoreUrl(ValueError):
    """A CONVEYOR_DOCUMENTS_URL (or `--to`) that names no store Conveyor can use."""


@dataclass(frozen=True, slots=True)
class StoreUrl:
    kind: str  # "postgresql", "folder" or "objects"
    url: str  # canonical
    path: str = ""  # the folder, or bucket/prefix for an object store
    scheme: str = ""


def parse(raw: str | None) -> StoreUrl:
    """The store `raw` names (None or empty: PostgreSQL), or BadStoreUrl saying why not."""
    text = (raw or "").strip()
    if text.lower() in ("", "postgresql", "postgresql:", "postgresql://", "postgres"):
        return StoreUrl("postgresql", POSTGRESQL)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme in ("postgresql", "postgres"):
        raise BadStoreUrl(
            f"{text!r}: documents stored in PostgreSQL go to the Conveyor database itself; "
            f"write {POSTGRESQL!r} (or leave {VARIABLE} unset), without a host or database"
        )
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise BadStoreUrl(
                f"{text!r}: a file URL names a folder on this machine (file:///path); "
                "mount a shared folder and name its local path"
            )
        folder = unquote(parts.path)
        if not folder.startswith("/") or parts.query or parts.fragment:
            raise BadStoreUrl(f"{text!r}: expected file:///absolute/path/to/a/folder")
        folder = str(PurePosixPath(folder))
        if ".." in PurePosixPath(folder).parts:
            raise BadStoreUrl(f"{text!r}: name the folder without '..'")
        return StoreUrl("folder", f"file://{folder}", folder, "file")
    if scheme in OBJECT_STORES:
        extra, module = OBJECT_STORES[scheme]
        location = (parts.netloc + parts.path).strip("/")
        if not parts.netloc or parts.query or parts.fragment:
            raise BadStoreUrl(
                f"{text!r}: expected {scheme}://bucket/optional/prefix (credentials and "
                "endpoints come from the SDK's own settings, not the URL)"
            )
        if importlib.util.find_spec(module) is None:
            raise BadStoreUrl(
                f"{text!r}: {scheme}:// needs {module}: pip install 'conveyor[{extra}]'"
            )
        return StoreUrl("objects", f"{scheme}://{location}", location, scheme)
    if not scheme and text.startswith("/"):
        raise BadStoreUrl(f"{text!r}: write a folder as a URL, file://{text}")
    accepted = ", ".join(f"{s}://" for s in OBJECT_STORES)
    raise BadStoreUrl(
        f"{text!r}: not a document store; expected {POSTGRESQL}, file:///folder or one of "
        f"{accepted}"
    )
