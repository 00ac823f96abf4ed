"""Document types: validation, the JSON schema sent to models, cross-checks, confidence."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from conveyor.documents.types import (
    DOCUMENT_TYPES,
    FAILED_CHECK_CEILING,
    Contract,
    Extraction,
    Invoice,
    KeyValues,
    cross_checks,
    document_confidence,
    json_schema,
    make_extraction,
)


def good_invoice(**changes: Any) -> Invoice:
    data: dict[str, Any] = {
        "number": "INV-1001",
        "issue_date": "2026-03-01",
        "due_date": "2026-03-31",
        "vendor": {"name": "Acme GmbH", "address": "Hauptstr. 1, 10115 Berlin", "tax_id": "DE1"},
        "customer": {"name": "Globex Ltd", "address": "1 High St, London"},
        "currency": "EUR",
        "line_items": [
            {"description": "Widgets", "quantity": "3", "unit_price": "9.50", "amount": "28.50"},
            {"description": "Setup", "quantity": 1, "unit_price": 100, "amount": "100.00"},
        ],
        "subtotal": "128.50",
        "tax": "24.42",
        "total": "152.92",
    }
    data.update(changes)
    return Invoice.model_validate(data)


def test_invoice_validates_and_round_trips_money_as_strings() -> None:
    invoice = good_invoice()
    assert invoice.total == Decimal("152.92")
    assert invoice.issue_date == datetime.date(2026, 3, 1)
    dumped = invoice.model_dump(mode="json")
    assert dumped["total"] == "152.92"
    assert dumped["line_items"][1]["unit_price"] == "100"
    assert Invoice.model_validate(dumped) == invoice


def test_money_accepts_numbers_and_grouped_strings_exactly() -> None:
    invoice = good_invoice(total=0.1, subtotal="1,234.50")
    assert invoice.total == Decimal("0.1")  # not 0.1000000000000000055...
    assert invoice.subtotal == Decimal("1234.50")


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"total": "12,5"}, "total"),
        ({"total": "NaN"}, "total"),
        ({"issue_date": "31/02/2026"}, "issue_date"),
        ({"currency": "euro"}, "currency"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_values_are_validation_errors_naming_the_field(
    changes: dict[str, Any], where: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        good_invoice(**changes)
    assert where in str(caught.value)


def test_currency_is_upper_cased() -> None:
    assert good_invoice(currency=" usd ").currency == "USD"


def _walk(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found.extend(_walk(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_walk(value))
    return found


@pytest.mark.parametrize("doc_type", sorted(DOCUMENT_TYPES))
def test_json_schema_is_plain_and_strict(doc_type: str) -> None:
    schema = json_schema(doc_type)
    assert schema["type"] == "object"
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    objects = [n for n in _walk(schema) if n.get("type") == "object"]
    assert objects
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    assert all("default" not in n for n in _walk(schema))


def test_invoice_schema_describes_money_as_decimal_strings() -> None:
    total = json_schema("invoice")["properties"]["total"]
    kinds = {alt["type"] for alt in total["anyOf"]}
    assert kinds == {"string", "null"}
    money = next(alt for alt in total["anyOf"] if alt["type"] == "string")
    assert money["pattern"].startswith("^-?[0-9]")


def test_unknown_type_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown document type 'receipt'; known: contract"):
        json_schema("receipt")


def test_a_consistent_invoice_passes_its_checks() -> None:
    assert cross_checks("invoice", good_invoice()) == []


def test_invoice_checks_name_what_disagrees() -> None:
    bad = good_invoice(subtotal="130.00", total="150.00", due_date="2026-02-01")
    failed = cross_checks("invoice", bad)
    assert any("sum to 128.50, not to the subtotal 130.00" in f for f in failed)
    assert any("not the total 150.00" in f for f in failed)
    assert any("due date 2026-02-01 is before the issue date 2026-03-01" in f for f in failed)


def test_a_tax_withheld_is_taken_off_the_total_by_the_check() -> None:
    # good_invoice: 128.50 net + 24.42 tax = 152.92; 19.28 withheld leaves 133.64.
    assert cross_checks("invoice", good_invoice(withheld="19.28", total="133.64")) == []
    failed = cross_checks("invoice", good_invoice(withheld="19.28"))
    assert failed == ["subtotal 128.50 + tax 24.42 - withheld 19.28 = 133.64, not the total 152.92"]


def test_invoice_line_arithmetic_is_checked() -> None:
    items = [{"description": "x", "quantity": "2", "unit_price": "5.00", "amount": "11.00"}]
    failed = cross_checks("invoice", good_invoice(line_items=items, subtotal="11.00"))
    assert failed == ["line 1: 2 x 5.00 = 10.00, not 11.00", failed[1]]
    assert "not the total" in failed[1]


def test_invoice_without_subtotal_checks_lines_plus_tax() -> None:
    assert cross_checks("invoice", good_invoice(subtotal=None)) == []
    failed = cross_checks("invoice", good_invoice(subtotal=None, tax=None))
    assert failed == ["line items 128.50 + tax 0 = 128.50, not the total 152.92"]


def test_missing_key_fields_are_failed_checks() -> None:
    failed = cross_checks("invoice", Invoice())
    assert failed == [
        "no invoice number found",
        "no issue date found",
        "no vendor name found",
        "no currency found",
        "no total found",
    ]


def test_contract_checks() -> None:
    good = Contract.model_validate(
        {
            "parties": [{"name": "A Ltd", "role": "Supplier"}, {"name": "B Inc", "role": "Client"}],
            "effective_date": "2026-01-01",
            "term_months": 24,
            "renewal": {"auto_renew": True, "notice_days": 60},
            "governing_law": "England and Wales",
            "payment_terms": "Net 30",
        }
    )
    assert cross_checks("contract", good) == []
    bad = good.model_copy(update={"parties": good.parties[:1], "term_months": None})
    assert cross_checks("contract", bad) == [
        "a contract needs two parties; found 1",
        "no term found",
    ]


def test_generic_and_mismatched_types() -> None:
    assert cross_checks("generic", KeyValues(items=[])) == ["no key-value pairs found"]
    with pytest.raises(ValueError, match="not the model of document type 'contract'"):
        cross_checks("contract", good_invoice())


def test_confidence_is_bounded_by_the_weakest_key_field_and_by_failed_checks() -> None:
    fields = {"number": 0.99, "total": 0.98, "vendor.address": 0.6}
    trusted = document_confidence(fields, [], key_fields=["number", "total"])
    assert trusted >= 0.9
    assert document_confidence(fields, [], key_fields=["number", "vendor.address"]) < 0.9
    checked = document_confidence(fields, ["x"], key_fields=["number", "total"])
    assert checked <= FAILED_CHECK_CEILING
    assert document_confidence(fields, ["x", "y"], key_fields=["number", "total"]) < checked
    assert document_confidence({}, []) == 0.0


def test_make_extraction_is_the_task_result() -> None:
    result = make_extraction(
        "invoice",
        good_invoice(total="999.99"),
        fields={"number": 1.0, "total": 1.0},
        notes=["page 2 has no text layer; OCR would be needed"],
        pages=2,
        extractor="offline",
    )
    assert isinstance(result, Extraction)
    dumped = result.model_dump(mode="json")
    assert dumped["confidence"] <= FAILED_CHECK_CEILING
    assert dumped["checks"] and "999.99" in dumped["checks"][0]
    assert dumped["data"]["total"] == "999.99"
    assert json.loads(json.dumps(dumped)) == dumped
