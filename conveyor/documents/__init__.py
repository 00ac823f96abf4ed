"""Documents: files uploaded for agents to read (PDFs and images).

storage.py   DocumentStore: streamed, size-limited, sniffed, content-addressed files
sniff.py     the media type from the first bytes
pdf.py       page counts with PDFium, behind the lock it needs
multipart.py a streaming multipart/form-data reader, for the upload route
submit.py    stored files into tasks: submit_files() for the CLI, submit_uploads() for the API
text.py      the text of a PDF page by page (PDFium), scanned pages noted
types.py     what agents extract: Invoice, Contract, KeyValues, cross-checks, Extraction
samples/     generated invoices and contracts with their truth (reportlab, optional)
"""

from conveyor.documents.errors import (
    DocumentError,
    IdempotencyConflict,
    TooLarge,
    UnreadableDocument,
    UnsupportedMediaType,
)
from conveyor.documents.storage import DocumentStore, StoredFile, Upload, max_upload_bytes
from conveyor.documents.submit import DocumentRecord, Submitted, submit_files, submit_uploads

__all__ = [
    "DocumentError",
    "DocumentRecord",
    "DocumentStore",
    "IdempotencyConflict",
    "StoredFile",
    "Submitted",
    "TooLarge",
    "UnreadableDocument",
    "UnsupportedMediaType",
    "Upload",
    "max_upload_bytes",
    "submit_files",
    "submit_uploads",
]
