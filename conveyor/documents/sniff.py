"""The media type of a file, from its first bytes: the client's name and Content-Type are
not trusted (a text file named x.pdf is text).

Accepted are the types the document agents read: PDF, the common raster images, and XML
(an e-invoice: ZUGFeRD, Factur-X, XRechnung, UBL; whether it is one is the agent's to say,
from its root element). A few other well-known signatures are recognised only to name what
was refused.
"""

from __future__ import annotations

import re

SNIFF_BYTES = 512  # every signature below fits; enough text to tell text from binary

PDF = "application/pdf"
XML = "application/xml"
# An XML document without the optional prolog starts with its root element's tag.
_ROOT_TAG = re.compile(rb"<[A-Za-z_][\w.:-]*[\s>/]")

# (offset, signature, media type), checked in order.
_ACCEPTED: list[tuple[int, bytes, str]] = [
    (0, b"%PDF-", PDF),
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (8, b"WEBP", "image/webp"),  # after b"RIFF" and the chunk size; checked below
    (0, b"II*\x00", "image/tiff"),
    (0, b"MM\x00*", "image/tiff"),
    (0, b"II+\x00", "image/tiff"),  # BigTIFF
    (0, b"MM\x00+", "image/tiff"),
]

_REFUSED: list[tuple[int, bytes, str]] = [
    (0, b"PK\x03\x04", "application/zip"),  # also docx, xlsx, odt, epub
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),  # doc, xls, msg
    (0, b"\x1f\x8b", "application/gzip"),
    (0, b"{\\rtf", "application/rtf"),
    (4, b"ftypheic", "image/heic"),
    (4, b"ftypheix", "image/heic"),
    (4, b"ftypmif1", "image/heif"),
    (4, b"ftypavif", "image/avif"),
    (4, b"ftyp", "video/mp4"),
]

ACCEPTED_TYPES = sorted({media_type for _, _, media_type in _ACCEPTED} | {XML})


def sniff(head: bytes) -> str:
    """The media type of a file that starts with `head` (at least SNIFF_BYTES of it, or
    the whole file when shorter)."""
    if not head:
        return "inode/x-empty"  # what file(1) says
    for offset, signature, media_type in _ACCEPTED + _REFUSED:
        if head.startswith(signature, offset):
            if media_type == "image/webp" and not head.startswith(b"RIFF"):
                continue
            return media_type
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith((b"<!doctype html", b"<html")):
        return "text/html"
    if text.startswith(b"<svg") or (text.startswith(b"<?xml") and b"<svg" in text):
        return "image/svg+xml"
    if text.startswith(b"<?xml") or (_ROOT_TAG.match(text) and _is_text(head)):
        return XML
    return "text/plain" if _is_text(head) else "application/octet-stream"


def accepted(media_type: str) -> bool:
    return media_type in ACCEPTED_TYPES


def _is_text(head: bytes) -> bool:
    # The head may end inside a multi-byte character: allow up to 3 bytes to be cut off.
    for cut in range(4):
        try:
            text = head[: len(head) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return all(c.isprintable() or c in "\t\r\n\f" for c in text)
    return False
