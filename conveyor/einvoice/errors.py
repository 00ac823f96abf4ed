"""What can be wrong with an e-invoice."""

from __future__ import annotations

from conveyor.errors import ConveyorError


class NotAnInvoice(ConveyorError):
    """The XML is not well-formed, or not an e-invoice of a syntax that is read here."""
