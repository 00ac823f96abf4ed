"""What can be wrong with a document, as exceptions the API and the CLI both turn into
answers: the web layer maps each to its status (413, 415, 422, 409)."""

from __future__ import annotations

from conveyor.errors import ConveyorError


class DocumentError(ConveyorError):
    """A file was refused; nothing of it was kept."""


class TooLarge(DocumentError):
    def __init__(self, limit: int, what: str = "the file") -> None:
        self.limit = limit
        super().__init__(
            f"{what} is larger than {limit} bytes (CONVEYOR_MAX_UPLOAD_BYTES); "
            "send smaller files, or fewer per request"
        )


class UnsupportedMediaType(DocumentError):
    def __init__(self, detected: str, accepted: list[str], name: str | None = None) -> None:
        self.detected = detected
        which = f"{name!r}" if name else "the file"
        super().__init__(
            f"{which} is {detected} (sniffed from its bytes, whatever its name says); "
            f"accepted: {', '.join(accepted)}"
        )


class UnreadableDocument(DocumentError):
    """The bytes look like an accepted type but cannot be opened (a damaged or
    password-protected PDF): refused now rather than failing its task later."""


class IdempotencyConflict(DocumentError):
    """The idempotency key already names a task for other bytes."""
