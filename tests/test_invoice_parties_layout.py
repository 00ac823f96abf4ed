"""Where a party's block lies under its heading: headings set at their block's left edge,
and headings centred over their boxes, side by side. Snippets written here, laid out by
spaces (two or more make a gap between cells) and read as a text layer without a PDF."""

from __future__ import annotations

import pytest

from conveyor.agents.invoice_marks import Party
from conveyor.agents.invoice_parties import _block_lines, _not_a_label, headings
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.offline import rules_invoice
from tests.snippets import party_name, text_invoice_data, text_layer

# One invoice whose two party boxes of labels and values stand side by side, under the
# headings line given.
_BOXES = """\
INVOICE 2024-117                                        Date: 04.03.2024

{headings}

Name      Northwind Tools Ltd                         Name      Harbour Foods Ltd
VAT ID    GB123456789                                 VAT ID    GB987654321
Address   1 High Street, Leeds                        Address   2 Low Road, York



Description          Qty      Unit price      Amount
Garden hose          2        10.00           20.00

Net                                                   20.00
VAT 20%                                               4.00
Total                                                 24.00
"""

# Each heading centred over its box: the seller's heading begins right of its own box's
# labels and values, the buyer's labels begin left of the buyer's heading.
CENTRED = _BOXES.format(
    headings="                 SELLER                                            BUYER"
)

# The headings at their blocks' left edges: each block's values stand right of its
# labels, the seller's well to the right of its heading.
LEFT = _BOXES.format(headings="SELLER                                                BUYER")

# Only the buyer's heading is centred; the seller's is at its block's left edge, and the
# buyer's box (its labels) begins left of where the buyer's heading does.
MIXED = _BOXES.format(
    headings="SELLER                                                             BUYER"
)


def test_headings_centred_over_their_boxes_own_the_cells_nearer_them() -> None:
    data = text_invoice_data(CENTRED)
    assert party_name(data, "vendor") == "Northwind Tools Ltd"
    assert party_name(data, "customer") == "Harbour Foods Ltd"


def test_headings_at_their_blocks_left_edge_keep_their_blocks() -> None:
    data = text_invoice_data(LEFT)
    assert party_name(data, "vendor") == "Northwind Tools Ltd"
    assert party_name(data, "customer") == "Harbour Foods Ltd"


def test_a_block_ends_where_a_centred_neighbours_box_begins() -> None:
    data = text_invoice_data(MIXED)
    assert party_name(data, "vendor") == "Northwind Tools Ltd"
    assert party_name(data, "customer") == "Harbour Foods Ltd"


@pytest.mark.parametrize("text", [CENTRED, LEFT, MIXED], ids=["centred", "left", "mixed"])
def test_each_block_holds_its_own_labels_and_values(text: str) -> None:
    sheet = Sheet.of(text_layer(text))
    blocks = {b.kind: [c.text for _, c in _block_lines(sheet, b)] for b in headings(sheet)}
    assert blocks["seller"] == [
        "Name",
        "Northwind Tools Ltd",
        "VAT ID",
        "GB123456789",
        "Address",
        "1 High Street, Leeds",
    ]
    assert blocks["buyer"] == [
        "Name",
        "Harbour Foods Ltd",
        "VAT ID",
        "GB987654321",
        "Address",
        "2 Low Road, York",
    ]


# No heading anywhere: the seller's letterhead above the title, and under the title the
# buyer's particulars behind their labels, as Greek invoices print them.
LABELLED_BUYER = """\
                                                  NIKOS PAPADOPOULOS
                                                  SOFTWARE CONSULTANT
                                                  Odos Ermou 5, Athens

INVOICE 7                                         Date: 04.03.2024

Name: Harbour Foods Ltd
Profession: Food wholesale
Address: 2 Low Road, York


Description          Qty      Unit price      Amount
Consulting           2        100.00          200.00

Total                                         200.00
"""


def test_a_labelled_name_under_the_title_is_the_buyers_when_nothing_else_is() -> None:
    data = text_invoice_data(LABELLED_BUYER)
    assert party_name(data, "customer") == "Harbour Foods Ltd"
    assert party_name(data, "vendor") == "NIKOS PAPADOPOULOS"
    # the rules take no label over its title for the buyer's (above the title stands the
    # seller); the learned party chooser, after them, may (offline.LEARNED_PARTIES)
    above = LABELLED_BUYER.replace("Name: Harbour Foods Ltd\n", "").replace(
        "INVOICE 7 ", "Name: Harbour Foods Ltd\nINVOICE 7 ", 1
    )
    invoice, _, _ = rules_invoice(text_layer(above))
    assert invoice.customer.name != "Harbour Foods Ltd"


def test_a_label_ending_with_its_colon_is_no_name() -> None:
    for label in ("À:", "(Gazette 1163/1997):", "Registered office :"):
        assert _not_a_label(Party(label, 0.6, "2 Low Road")) == Party(address="2 Low Road")
    assert _not_a_label(Party("Harbour Foods Ltd", 0.6)).name == "Harbour Foods Ltd"
    assert _not_a_label(Party("Harbour: Foods Ltd", 0.6)).name == "Harbour: Foods Ltd"
