"""The document types agents extract, as pydantic models, and what an agent returns.

Invoice, Contract, KeyValues   the data, with a JSON schema (`json_schema()` gives the one
                               an LLM is asked to fill: no `$ref`, every key required)
DOCUMENT_TYPES                 the name a task uses -> the model
cross_checks()                 what must hold between fields, as human-readable failures
Extraction                     a document agent's task result
document_confidence()          one score for a document, shared by both extractors

Choices, and why:
- Money is `Decimal`, serialised in JSON as a string ("1234.56"): exact (no binary float
  rounding on its way through the database), and accepted back as a string or a number.
- Every field is nullable: null means "not found in the document". A missing value is a
  matter of confidence and of cross-checks, not a validation error, so that an extractor
  can always say what it did find. Values that are present must be well-formed (a date is
  a date, a currency three letters).
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
)

_GROUPED = re.compile(r"^-?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?$")


def _to_decimal(value: object) -> object:
    # Floats go through str() so that 0.1 becomes Decimal("0.1"), not its binary expansion.
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, str):
        text = value.strip()
        # "1,234.56" is unambiguous; "1,5" is not, and is left to fail.
        if _GROUPED.match(text):
            text = text.replace(",", "")
        try:
            return Decimal(text)
        except InvalidOperation:
            return value  # pydantic reports it as an invalid decimal
    return value


# The pattern an amount or a quantity is written in, for a model: bounded, because a model
# held to it by a grammar (llama.cpp's server) can otherwise write digits without end
# ("12.00000000000000166666...", seen with a small model until the answer's token bound).
# 15 digits before the point and 6 after hold any invoice's amounts and unit prices; the
# validator itself reads any decimal.
DECIMAL_PATTERN = r"^-?[0-9]{1,15}(\.[0-9]{1,6})?$"

Money = Annotated[
    Decimal,
    BeforeValidator(_to_decimal),
    Field(allow_inf_nan=False),
    PlainSerializer(lambda d: str(d), return_type=str, when_used="json"),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": DECIMAL_PATTERN,
            "description": "a decimal amount as a string, '.' as decimal point, "
            "no thousands separators or currency sign, e.g. '1234.56'",
        }
    ),
]
"""An amount of money: exact, written in JSON as a string."""

Quantity = Annotated[
    Decimal,
    BeforeValidator(_to_decimal),
    Field(allow_inf_nan=False),
    PlainSerializer(lambda d: str(d), return_type=str, when_used="json"),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": DECIMAL_PATTERN,
            "description": "a decimal number as a string, e.g. '3' or '2.5'",
        }
    ),
]

_CURRENCY = re.compile(r"^[A-Z]{3}$")


def _currency(value: object) -> object:
    if isinstance(value, str):
        value = value.strip().upper()
        if not _CURRENCY.match(value):
            raise ValueError(f"{value!r} is not an ISO 4217 code (three letters, e.g. EUR)")
    return value


Currency = Annotated[
    str,
    BeforeValidator(_currency),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": "^[A-Z]{3}$",
            "description": "ISO 4217 currency code, e.g. USD, EUR, GBP",
        }
    ),
]


class _Model(BaseModel):
    # Unknown keys are refused: an extractor that invents fields is a bug to see.
    model_config = ConfigDict(extra="forbid")


class Vendor(_Model):
    name: str | None = None
    address: str | None = Field(
        default=None, description="full postal address, lines joined by ', '"
    )
    tax_id: str | None = Field(default=None, description="VAT number, EIN, ABN, ... as printed")


class Customer(_Model):
    name: str | None = None
    address: str | None = Field(
        default=None, description="full postal address, lines joined by ', '"
    )


class LineItem(_Model):
    description: str | None = None
    quantity: Quantity | None = None
    unit_price: Money | None = None
    amount: Money | None = None


class Invoice(_Model):
    number: str | None = Field(default=None, description="the invoice number as printed")
    issue_date: datetime.date | None = None
    due_date: datetime.date | None = None
    vendor: Vendor = Field(default_factory=lambda: Vendor())
    customer: Customer = Field(default_factory=lambda: Customer())
    currency: Currency | None = None
    line_items: list[LineItem] = Field(default_factory=list)
    subtotal: Money | None = None
    tax: Money | None = Field(default=None, description="total tax; null if the invoice shows none")
    withheld: Money | None = Field(
        default=None,
        description="tax withheld by the buyer and taken off the total (withholding tax,"
        " retención, ritenuta d'acconto); null if none",
    )
    total: Money | None = None


class Party(_Model):
    name: str | None = None
    role: str | None = Field(default=None, description="e.g. 'Supplier', 'Customer', 'Licensor'")


class Renewal(_Model):
    auto_renew: bool | None = None
    notice_days: int | None = Field(default=None, ge=0, description="days of notice to not renew")
    text: str | None = Field(default=None, description="the renewal clause, when not a simple rule")


class Contract(_Model):
    parties: list[Party] = Field(default_factory=list)
    effective_date: datetime.date | None = None
    term_months: int | None = Field(default=None, ge=0)
    renewal: Renewal = Field(default_factory=lambda: Renewal())
    governing_law: str | None = Field(
        default=None, description="e.g. 'State of New York', 'England'"
    )
    payment_terms: str | None = Field(default=None, description="e.g. 'Net 30'")


class KeyValue(_Model):
    key: str
    value: str


class KeyValues(_Model):
    items: list[KeyValue] = Field(default_factory=list)


DOCUMENT_TYPES: dict[str, type[BaseModel]] = {
    "invoice": Invoice,
    "contract": Contract,
    "generic": KeyValues,
}


def model_for(doc_type: str) -> type[BaseModel]:
    try:
        return DOCUMENT_TYPES[doc_type]
    except KeyError:
        known = ", ".join(sorted(DOCUMENT_TYPES))
        raise ValueError(f"unknown document type {doc_type!r}; known: {known}") from None


def json_schema(doc_type: str) -> dict[str, Any]:
    """The type's JSON schema in the form OpenAI's structured output (strict) accepts and
    any other model can follow: nested models inlined (no `$ref`/`$defs`), every object
    closed (`additionalProperties: false`) with all its keys required (optional ones are
    nullable instead), no defaults, no titles."""
    schema = model_for(doc_type).model_json_schema(mode="serialization")
    defs = schema.pop("$defs", {})
    inlined = _inline(schema, defs)
    assert isinstance(inlined, dict)
    return inlined


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _inline(merged, defs)
    out = {k: _inline(v, defs) for k, v in node.items() if k not in ("title", "default")}
    if "properties" in node:  # field names are not keywords: keep a field called "title"
        out["properties"] = {k: _inline(v, defs) for k, v in node["properties"].items()}
    if out.get("type") == "object" and "properties" in out:
        out["additionalProperties"] = False
        out["required"] = list(out["properties"])
    return out


# ----------------------------------------------------------------------------- cross-checks

CENT = Decimal("0.01")


def _close(a: Decimal, b: Decimal, tolerance: Decimal = CENT) -> bool:
    return abs(a - b) <= tolerance


def cross_checks(doc_type: str, data: BaseModel) -> list[str]:
    """What does not hold between the fields of `data`, one sentence per failure; an empty
    list when everything checked agrees. Missing key fields count as failures too."""
    if doc_type == "invoice" and isinstance(data, Invoice):
        return _invoice_checks(data)
    if doc_type == "contract" and isinstance(data, Contract):
        return _contract_checks(data)
    if doc_type == "generic" and isinstance(data, KeyValues):
        return [] if data.items else ["no key-value pairs found"]
    raise ValueError(f"{type(data).__name__} is not the model of document type {doc_type!r}")


def _invoice_checks(inv: Invoice) -> list[str]:
    failed = [f"no {what} found" for what in _missing_invoice_fields(inv)]
    for i, item in enumerate(inv.line_items, 1):
        if item.quantity is not None and item.unit_price is not None and item.amount is not None:
            expected = item.quantity * item.unit_price
            # Rounded to the amount's own precision: 2.5 x 25877 yen is 64693 yen.
            exponent = item.amount.as_tuple().exponent
            half_unit = Decimal(5).scaleb(int(exponent) - 1) if isinstance(exponent, int) else CENT
            if not _close(expected, item.amount, max(CENT, half_unit)):
                failed.append(
                    f"line {i}: {item.quantity} x {item.unit_price} = {expected:.2f}, "
                    f"not {item.amount}"
                )
    amounts = [item.amount for item in inv.line_items]
    lines_sum = sum((a for a in amounts if a is not None), Decimal(0))
    if amounts and None in amounts:
        failed.append("some line items have no amount")
    elif amounts and inv.subtotal is not None and not _close(lines_sum, inv.subtotal):
        failed.append(f"line items sum to {lines_sum}, not to the subtotal {inv.subtotal}")
    base = inv.subtotal if inv.subtotal is not None else (lines_sum if amounts else None)
    if base is not None and inv.total is not None:
        tax = inv.tax if inv.tax is not None else Decimal(0)
        # A tax withheld (the buyer pays it to the tax office) is no part of the total.
        held = inv.withheld if inv.withheld is not None else Decimal(0)
        if not _close(base + tax - held, inv.total):
            what = "subtotal" if inv.subtotal is not None else "line items"
            less = f" - withheld {held}" if held else ""
            failed.append(
                f"{what} {base} + tax {tax}{less} = {base + tax - held}, not the total {inv.total}"
            )
    if inv.issue_date and inv.due_date and inv.due_date < inv.issue_date:
        failed.append(f"due date {inv.due_date} is before the issue date {inv.issue_date}")
    return failed


def _missing_invoice_fields(inv: Invoice) -> list[str]:
    wanted = {
        "invoice number": inv.number,
        "issue date": inv.issue_date,
        "vendor name": inv.vendor.name,
        "currency": inv.currency,
        "total": inv.total,
    }
    return [name for name, value in wanted.items() if value in (None, "")]


def _contract_checks(con: Contract) -> list[str]:
    failed = []
    named = [p for p in con.parties if p.name]
    if len(named) < 2:
        failed.append(f"a contract needs two parties; found {len(named)}")
    if con.effective_date is None:
        failed.append("no effective date found")
    if con.term_months is None:
        failed.append("no term found")
    elif con.term_months == 0:
        failed.append("the term is 0 months")
    renewal = con.renewal
    if renewal.auto_renew is False and renewal.notice_days is not None:
        failed.append("a notice period is given for a contract that does not renew")
    return failed


# ------------------------------------------------------------------------------- the result


class Extraction(BaseModel):
    """What a document agent returns as its task's result (`tasks.result`)."""

    type: str = Field(description="the document type: invoice, contract or generic")
    data: dict[str, Any] = Field(description="the validated model, in JSON mode")
    confidence: float = Field(ge=0, le=1, description="document-level confidence")
    fields: dict[str, float] = Field(
        default_factory=dict, description="per-field confidence, dotted names"
    )
    checks: list[str] = Field(default_factory=list, description="failed cross-checks")
    notes: list[str] = Field(default_factory=list)
    pages: int = Field(ge=0)
    extractor: str = Field(description="'offline' or 'llm:<model>'")


FAILED_CHECK_CEILING = 0.85
"""A document with a failed cross-check scores at most this: below the 0.9 that marks a
document to trust without a look, whatever its fields' own scores say."""


def document_confidence(
    fields: dict[str, float], checks: list[str], *, key_fields: list[str] | None = None
) -> float:
    """One confidence for a document from its fields' confidences and its failed checks.

    The weakest key field bounds the document (one wrong total makes the whole wrong),
    blended with the mean of all fields so that many shaky minor fields count too; each
    failed cross-check then takes away a fifth and caps the score at FAILED_CHECK_CEILING.
    `key_fields` default to all of `fields`; a key field with no score counts as 0."""
    keys = key_fields if key_fields is not None else list(fields)
    if not keys:
        return 0.0
    weakest = min(fields.get(k, 0.0) for k in keys)
    mean = sum(fields.values()) / len(fields) if fields else 0.0
    score = 0.8 * weakest + 0.2 * mean
    if checks:
        score = min(score * 0.8 ** len(checks), FAILED_CHECK_CEILING)
    return round(max(0.0, min(1.0, score)), 3)


def make_extraction(
    doc_type: str,
    data: BaseModel,
    *,
    fields: dict[str, float],
    notes: list[str],
    pages: int,
    extractor: str,
    key_fields: list[str] | None = None,
) -> Extraction:
    """The result both extractors return: `data` checked, its confidence scored."""
    checks = cross_checks(doc_type, data)
    return Extraction(
        type=doc_type,
        data=data.model_dump(mode="json"),
        confidence=document_confidence(fields, checks, key_fields=key_fields),
        fields=fields,
        checks=checks,
        notes=notes,
        pages=pages,
        extractor=extractor,
    )
