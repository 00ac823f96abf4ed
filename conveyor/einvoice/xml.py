"""Parsing e-invoice XML safely, and walking it by element names whatever the namespace.

The XML comes from uploads and from inside uploaded PDFs: nobody vouches for it. The
parser resolves no entities (no XXE, no billion laughs), fetches nothing from the network
and refuses trees deeper or larger than libxml2's safe defaults (`huge_tree` off).

CII has two namespace generations (ZUGFeRD 1.0 and 2.x / Factur-X) and UBL its own; the
element names EN 16931 binds are the same within each syntax. Paths are therefore written
by local name ("SellerTradeParty/Name") and compiled once into XPath steps that match any
namespace. Paths are constants of this package, never user input.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from lxml import etree  # type: ignore[import-untyped]

from conveyor.einvoice.errors import NotAnInvoice

CII_ROOTS = {"CrossIndustryInvoice": "CII", "CrossIndustryDocument": "CII 1.0 (ZUGFeRD 1.0)"}
UBL_ROOTS = {"Invoice", "CreditNote"}
UBL_NAMESPACE_PREFIX = "urn:oasis:names:specification:ubl:schema:xsd:"

_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_pis=True
)


def parse(data: bytes) -> Any:
    """The root element of `data`; NotAnInvoice when it is not well-formed XML."""
    try:
        return etree.fromstring(data, parser=_PARSER)
    except (etree.XMLSyntaxError, ValueError) as exc:
        raise NotAnInvoice(f"it is not well-formed XML ({exc})") from None


def local(element: Any) -> str:
    return str(etree.QName(element).localname)


def namespace(element: Any) -> str:
    return str(etree.QName(element).namespace or "")


def syntax(root: Any) -> str:
    """'CII', 'CII 1.0 (ZUGFeRD 1.0)' or 'UBL'; NotAnInvoice for any other root element."""
    name = local(root)
    if name in CII_ROOTS:
        return CII_ROOTS[name]
    if name in UBL_ROOTS and namespace(root).startswith(UBL_NAMESPACE_PREFIX):
        return "UBL"
    return _refuse(root)


def _refuse(root: Any) -> str:
    ns = namespace(root)
    raise NotAnInvoice(
        f"its root element is {local(root)}{f' in {ns}' if ns else ''}; an e-invoice is a "
        "CII CrossIndustryInvoice (ZUGFeRD 2, Factur-X, XRechnung), a ZUGFeRD 1.0 "
        "CrossIndustryDocument, or a UBL Invoice or CreditNote"
    )


@lru_cache(maxsize=256)
def _compiled(path: str) -> Any:
    steps = "/".join(f"*[local-name()='{step}']" for step in path.split("/"))
    return etree.XPath(steps)


def nodes(node: Any, path: str) -> list[Any]:
    """The elements at `path` (local names joined by '/') below `node`, in document order."""
    if node is None:
        return []
    return list(_compiled(path)(node))


def node(node: Any, path: str) -> Any:
    """The first element at `path` below `node`, or None."""
    found = nodes(node, path)
    return found[0] if found else None


def text(element: Any, path: str | None = None) -> str | None:
    """The element's text (or that of the first at `path` below it), whitespace collapsed;
    None when absent or empty."""
    target = element if path is None else node(element, path)
    if target is None or target.text is None:
        return None
    value = " ".join(str(target.text).split())
    return value or None


def decimal(element: Any, path: str | None = None) -> Decimal | None:
    """A number as the XML writes it ('1234.50'); None when absent or not a finite number."""
    raw = text(element, path)
    if raw is None:
        return None
    try:
        value = Decimal(raw)
    except InvalidOperation:
        return None
    return value if value.is_finite() else None
