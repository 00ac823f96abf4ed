"""What can be wrong with a document, or with the folder it is stored in, as exceptions the
API and the CLI both turn into answers: the web layer maps each to its status (413, 415,
422, 409 for the document; 507, 503 for the folder)."""

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


class StorageUnavailable(ConveyorError):
    """The documents folder could not take a file (an OS error writing, flushing or moving
    it). Nothing of the upload was kept. Not a DocumentError: the file was fine."""

    def __init__(self, root: object, problem: str, advice: str) -> None:
        self.root = root
        super().__init__(
            f"the documents folder {root} {problem}; nothing of this upload was kept: {advice}"
        )


class StorageFull(StorageUnavailable):
    """No space left on the folder's device, or the user's disk quota is used up."""


class StorageNotWritable(StorageUnavailable):
    """The folder is on a read-only file system, or this process may not write there."""
