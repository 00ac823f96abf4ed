"""A document's pages as the LLM extractor sends them: text pages packed, in order,
into chunks whose text fits the room a request leaves (a page larger than that alone is cut
at line ends), and scanned pages rendered to PNG with PDFium, sent a few per request.
"""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

from conveyor.agents.llm_budget import CHARS_PER_TOKEN, Chunk
from conveyor.documents.text import PageText

IMAGES_PER_REQUEST = 4
IMAGE_SCALE = 1.5  # 108 dpi: small print stays legible, a page stays under ~200 KB


def chunk_text_pages(pages: Sequence[PageText], room_tokens: int) -> list[Chunk]:
    """Pages with text, packed in order into chunks of at most `room_tokens` of text."""
    chunks: list[Chunk] = []
    numbers: list[int] = []
    parts: list[str] = []
    used = 0
    room_chars = max(1, room_tokens) * CHARS_PER_TOKEN

    def flush() -> None:
        nonlocal numbers, parts, used
        if parts:
            chunks.append(Chunk(pages=tuple(numbers), text="\n\n".join(parts)))
        numbers, parts, used = [], [], 0

    for page in pages:
        if not page.has_text_layer:
            continue
        for piece in _pieces(page, room_chars):
            size = len(piece) + 2
            if used and used + size > room_chars:
                flush()
            if not numbers or numbers[-1] != page.number:
                numbers.append(page.number)
            parts.append(piece)
            used += size
    flush()
    return chunks


def _pieces(page: PageText, room_chars: int) -> list[str]:
    """The page with its header, cut at line ends into pieces that fit (rarely needed)."""
    header = f"--- page {page.number} ---\n"
    if len(header) + len(page.text) + 2 <= room_chars:
        return [header + page.text]
    limit = max(1, room_chars - len(header) - 2)
    pieces: list[str] = []
    current = ""
    for line in page.text.split("\n"):
        while len(line) > limit:  # a line longer than a chunk: cut it anywhere
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:limit])
            line = line[limit:]
        if current and len(current) + 1 + len(line) > limit:
            pieces.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        pieces.append(current)
    return [header + piece for piece in pieces]


def render_pages(pdf: Path, numbers: Sequence[int], scale: float = IMAGE_SCALE) -> list[str]:
    """PNG data URLs of the given 1-based pages (grayscale). Blocking: run in a thread."""
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    from conveyor.documents.pdf import PDFIUM_LOCK

    urls = []
    with PDFIUM_LOCK:
        document = pdfium.PdfDocument(pdf)
        try:
            for number in numbers:
                page = document[number - 1]
                bitmap = page.render(scale=scale, grayscale=True)
                try:
                    png = _png_gray(
                        bitmap.width, bitmap.height, bytes(bitmap.buffer), bitmap.stride
                    )
                finally:
                    bitmap.close()
                    page.close()
                urls.append("data:image/png;base64," + base64.b64encode(png).decode())
        finally:
            document.close()
    return urls


def _png_gray(width: int, height: int, pixels: bytes, stride: int) -> bytes:
    """An 8-bit grayscale PNG (no Pillow needed: a PNG is zlib'd rows in three chunks)."""
    rows = b"".join(b"\x00" + pixels[y * stride : y * stride + width] for y in range(height))

    def part(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + part(b"IHDR", header)
        + part(b"IDAT", zlib.compress(rows, 6))
        + part(b"IEND", b"")
    )
