"""Net and tax absent as the document states them (a total and nothing else) are read
right, and scored so (invoice_sums.absent_as_stated); absent because a printed one went
unread, they stay 0. Each invoice is a snippet drawn here."""

from __future__ import annotations

from pytest import MonkeyPatch

from conveyor.agents import invoice_sums
from tests.snippets import Draw, extraction

HEAD: Draw = [
    (40, 40, "Kestrel Print Works"),
    (40, 52, "7 Ropewalk, Leith EH6 6QT"),
    (380, 40, "INVOICE"),
    (380, 60, "Invoice No."),
    (470, 60, "KP-3391"),
    (380, 72, "Date"),
    (470, 72, "2025-02-11"),
    (40, 100, "Bill to"),
    (40, 112, "Thistle Books Ltd"),
    (40, 124, "22 Canal Row, Perth PH1 5AB"),
    (40, 170, "Description"),
    (300, 170, "Qty"),
    (380, 170, "Unit price"),
    (470, 170, "Amount"),
    (40, 184, "Posters A2"),
    (300, 184, "40"),
    (380, 184, "2.50"),
    (470, 184, "100.00"),
    (40, 198, "Flyers A5"),
    (300, 198, "500"),
    (380, 198, "0.10"),
    (470, 198, "50.00"),
]
TOTAL_ONLY: Draw = [*HEAD, (380, 230, "Total"), (470, 230, "£150.00")]


def test_a_total_only_document_scores_its_absent_net_and_tax() -> None:
    result = extraction(TOTAL_ONLY)
    assert result.data["subtotal"] is None and result.data["tax"] is None
    assert result.data["total"] == "150.00"
    assert 0 < result.fields["subtotal"] < 0.9
    assert 0 < result.fields["tax"] < 0.9
    assert result.fields["tax"] <= result.fields["total"]


def test_the_document_scores_higher_than_with_its_absent_fields_at_zero(
    monkeypatch: MonkeyPatch,
) -> None:
    scored = extraction(TOTAL_ONLY).confidence
    monkeypatch.setattr(invoice_sums, "absent_as_stated", lambda *_: 0.0)
    unscored = extraction(TOTAL_ONLY).confidence
    assert scored > unscored
    assert scored < 0.9


def test_a_net_label_printed_but_unread_stays_zero() -> None:
    # "Subtotal" is printed and its amount is not read: the net is missed, not absent.
    draw: Draw = [*HEAD, (380, 216, "Subtotal"), (470, 216, "see page 2"), *TOTAL_ONLY[-2:]]
    result = extraction(draw)
    assert result.data["subtotal"] is None
    assert result.fields["subtotal"] == 0.0
    assert result.fields["tax"] == 0.0


def test_a_tax_rate_printed_anywhere_keeps_them_zero() -> None:
    draw: Draw = [*TOTAL_ONLY, (40, 260, "Prices include 20% duty")]
    result = extraction(draw)
    assert result.data["tax"] is None
    assert result.fields["tax"] == 0.0


def test_items_that_do_not_make_the_total_keep_them_zero() -> None:
    draw: Draw = [*HEAD, (380, 230, "Total"), (470, 230, "£180.00")]
    result = extraction(draw)
    assert result.data["tax"] is None
    assert result.fields["tax"] == 0.0
