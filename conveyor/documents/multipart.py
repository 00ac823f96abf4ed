"""A streaming multipart/form-data reader (RFC 7578) for uploads that must never sit in
memory: bytes go in as they arrive, events come out.

    reader = MultipartReader(boundary)
    for event in reader.feed(chunk):   # PartStart, then bytes of its body, then PartEnd
        ...
    reader.close()                     # MalformedMultipart unless the body was complete

The framing is python-multipart's streaming parser (the one Starlette uses), turned from
callbacks into events; what is ours is reading the part headers, including RFC 5987 file
names (`filename*=UTF-8''...`), which browsers send for non-ASCII names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser

from conveyor.documents.errors import DocumentError

MAX_HEADER_BYTES = 16 * 1024  # the headers of one part
_BOUNDARY = re.compile(r"^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$")  # RFC 2046
_PARAM = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')


class MalformedMultipart(DocumentError):
    pass


@dataclass(frozen=True, slots=True)
class PartStart:
    name: str
    filename: str | None  # as the client gave it: for display only, never for a path
    content_type: str | None


@dataclass(frozen=True, slots=True)
class PartEnd:
    pass


Event = PartStart | bytes | PartEnd


def boundary_of(content_type: str) -> str:
    """The boundary of a `multipart/form-data; boundary=...` Content-Type."""
    kind, params = parse_header(content_type)
    boundary = params.get("boundary")
    if kind != "multipart/form-data" or boundary is None or not _BOUNDARY.match(boundary):
        raise MalformedMultipart(f"not multipart/form-data with a valid boundary: {content_type!r}")
    return boundary


def parse_header(value: str) -> tuple[str, dict[str, str]]:
    """`form-data; name="files"; filename="a.pdf"` -> ("form-data", {"name": ..., ...}).
    Parameter names are lowercased; `filename*=UTF-8''...` (RFC 5987) wins over filename."""
    kind, _, rest = value.partition(";")
    params: dict[str, str] = {}
    for key, raw in _PARAM.findall(";" + rest):
        key = key.lower()
        text = raw.strip()
        if text.startswith('"'):
            text = re.sub(r"\\(.)", r"\1", text[1:-1])
        if key.endswith("*"):
            charset, _, encoded = text.partition("''")
            try:
                text = unquote(encoded, encoding=charset or "utf-8", errors="replace")
            except LookupError:  # an unknown charset
                text = unquote(encoded, errors="replace")
            key = key[:-1]
        elif key in params:
            continue  # the RFC 5987 form came first and wins
        params[key] = text
    return kind.strip().lower(), params


class MultipartReader:
    def __init__(self, boundary: str) -> None:
        self._events: list[Event] = []
        self._header = bytearray()  # the raw header lines of the current part
        self._field = bytearray()
        self._ended = False
        self._parser = MultipartParser(
            boundary.encode("ascii"),
            {
                "on_part_begin": self._header.clear,
                "on_header_field": self._on_field,
                "on_header_value": self._on_value,
                "on_header_end": self._on_header_end,
                "on_headers_finished": self._on_headers_finished,
                "on_part_data": self._on_data,
                "on_part_end": lambda: self._events.append(PartEnd()),
                "on_end": self._on_end,
            },
            max_header_size=MAX_HEADER_BYTES,
            max_header_count=16,
        )

    def feed(self, data: bytes) -> list[Event]:
        if self._ended:
            return []  # after the closing delimiter: ignored, as RFC 2046 says
        try:
            self._parser.write(data)
        except MultipartParseError as exc:
            raise MalformedMultipart(f"not a well-formed multipart body: {exc}") from None
        events, self._events = self._events, []
        return events

    def close(self) -> None:
        if not self._ended:
            raise MalformedMultipart("the body ends before the closing boundary")

    # The parser's callbacks get slices of its buffer: (data, start, end).

    def _on_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _on_value(self, data: bytes, start: int, end: int) -> None:
        if self._field:
            self._header += bytes(self._field) + b":"
            self._field.clear()
        self._header += data[start:end]

    def _on_header_end(self) -> None:
        if self._field:  # a header with an empty value
            self._header += bytes(self._field) + b":"
            self._field.clear()
        self._header += b"\r\n"

    def _on_headers_finished(self) -> None:
        self._events.append(_part_start(bytes(self._header).rstrip(b"\r\n")))

    def _on_data(self, data: bytes, start: int, end: int) -> None:
        if end > start:
            self._events.append(data[start:end])

    def _on_end(self) -> None:
        self._ended = True


def _part_start(raw: bytes) -> PartStart:
    headers: dict[str, str] = {}
    # Browsers send file names as raw UTF-8 in the quoted string.
    for line in raw.decode("utf-8", errors="replace").split("\r\n"):
        key, colon, value = line.partition(":")
        if not colon:
            raise MalformedMultipart(f"not a header line: {line[:100]!r}")
        headers[key.strip().lower()] = value.strip()
    disposition = headers.get("content-disposition")
    if disposition is None:
        raise MalformedMultipart("a part has no Content-Disposition header")
    kind, params = parse_header(disposition)
    if kind != "form-data" or "name" not in params:
        raise MalformedMultipart(f"a part is not form-data with a name: {disposition[:200]!r}")
    return PartStart(params["name"], params.get("filename"), headers.get("content-type"))
