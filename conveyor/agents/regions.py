"""The parts of an invoice's text that hold a field: what the hybrid extractor sends.

    found = regions(text, ["due_date", "total"])   # field -> Region (lines of its pages)
    excerpt = excerpt_of(text, found.values())     # a DocumentText of those lines only

A field's region is the lines around the labels the invoice rules know for it
(`conveyor.agents.invoice_labels`, `invoice_sum_labels`, `invoice_party_labels`: "Due
date", "Fällig am", "Total TTC", "Bill to", ...), found at the start of any word of a line,
the longest label of any kind winning as in the rules ("Amount due" is a sum, not the "due"
of a due date): the label's line, the line before it (a value printed above its label) and
the next few (a value printed under it; a party's block), up to a line that carries a label
of its own (another field's).
The vendor's region is also the head of the first page, where a letterhead is.

The dates are told apart by their labels alone (an invoice prints several of the same
form), so their regions hold only what the invoice rules would read as a label's value
(`Labels.values`): a label that runs on into a sentence ("Fälligkeit 21.05.2018 den Beitrag
... abbuchen") is a word of the sentence, not a label, and a value is a few words, on the
label's line or a short line next to it; a region that then prints no date is none. So a
date the rules found no label for, a paragraph that mentions it, or an instalment plan in
prose, is not asked of the model, nor taken from it. A field
whose labels the text does not print has no region (`conveyor.agents.hybrid` says what
follows: not asked, or the whole text). Line items have no labels of their own: their
region is the whole text.

The vocabulary is the rules' own: one place for what a label is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from conveyor.agents.invoice_fields import is_value
from conveyor.agents.invoice_labels import field_label, sum_label
from conveyor.agents.invoice_party_labels import party_heading
from conveyor.agents.values import dates_in
from conveyor.documents.amounts import amounts_on
from conveyor.documents.text import DocumentText, PageText

Finder = Callable[[str], "tuple[str, int] | None"]


def _prints_a_date(text: str) -> bool:
    return bool(dates_in(text))


@dataclass(frozen=True)
class Labels:
    find: Finder
    kinds: frozenset[str]
    before: int = 1  # lines kept above a label's line
    after: int = 2  # and below it
    # Values only (the module says why): the label not in a sentence, the lines next to
    # it kept only while they are a value's few words, and the region kept only if it
    # prints what `values` looks for.
    values: Callable[[str], bool] | None = None


LABELS: dict[str, tuple[Labels, ...]] = {
    "number": (Labels(field_label, frozenset({"number", "reference"})),),
    "issue_date": (Labels(field_label, frozenset({"issue", "date"}), values=_prints_a_date),),
    "due_date": (Labels(field_label, frozenset({"due"}), values=_prints_a_date),),
    "subtotal": (Labels(sum_label, frozenset({"net", "lines"})),),
    "tax": (Labels(sum_label, frozenset({"tax"})),),
    "total": (Labels(sum_label, frozenset({"gross", "due"})),),
    # A currency is printed by the amounts, most surely by the sums'.
    "currency": (Labels(sum_label, frozenset({"gross", "due", "net", "lines", "tax"})),),
    "vendor": (Labels(party_heading, frozenset({"seller"}), before=0, after=6),),
    "customer": (Labels(party_heading, frozenset({"buyer"}), before=0, after=6),),
}
"""Per top-level invoice field: the labels that mark where it is printed."""

HEAD_LINES = 8  # the head of the first page: a letterhead, the vendor's name
WHOLE = frozenset({"line_items"})  # fields whose region is the whole text


@dataclass(frozen=True)
class Region:
    """Lines of a document that hold a field: (page number, line index) pairs."""

    lines: frozenset[tuple[int, int]]

    def text(self, document: DocumentText) -> str:
        return excerpt_of(document, [self]).text


def regions(document: DocumentText, fields: Sequence[str]) -> dict[str, Region]:
    """The region of each of `fields` that the text has (a field without one is left out)."""
    pages = [p for p in document.pages if p.has_text_layer and p.text.strip()]
    out: dict[str, Region] = {}
    for name in fields:
        if name in WHOLE:
            every = {(p.number, i) for p in pages for i in range(len(p.text.split("\n")))}
            if every:
                out[name] = Region(frozenset(every))
            continue
        lines: set[tuple[int, int]] = set()
        for labels in LABELS.get(name, ()):
            near = _around(pages, labels)
            if labels.values is not None and not labels.values(_text_of(pages, near)):
                continue  # labels without a value by them: the text does not print one
            lines |= near
        if name == "vendor" and pages:
            head = pages[0].text.split("\n")[:HEAD_LINES]
            lines |= {(pages[0].number, i) for i in range(len(head))}
        if lines:
            out[name] = Region(frozenset(lines))
    return out


def excerpt_of(document: DocumentText, found: Iterable[Region]) -> DocumentText:
    """The document with only the lines of the regions, in page and line order."""
    wanted: set[tuple[int, int]] = set()
    for region in found:
        wanted |= region.lines
    pages = []
    for page in document.pages:
        lines = page.text.split("\n")
        kept = [line for i, line in enumerate(lines) if (page.number, i) in wanted]
        if kept:
            text = "\n".join(kept)
            pages.append(
                PageText(number=page.number, text=text, has_text_layer=True, chars=len(text))
            )
    return DocumentText(pages=pages, name=document.name)


FINDERS: tuple[Finder, ...] = (field_label, sum_label, party_heading)


def _around(pages: Sequence[PageText], labels: Labels) -> set[tuple[int, int]]:
    lines: set[tuple[int, int]] = set()
    for page in pages:
        text = page.text.split("\n")
        found = [_labels_on(line) for line in text]
        for i, on in enumerate(found):
            hits = [h for h in on if h.find is labels.find and h.kind in labels.kinds]
            if labels.values is not None:
                hits = [h for h in hits if not _in_a_sentence(text[i], h, on)]
            if hits and labels.find is sum_label and _heads_a_column(text, i):
                continue
            if not hits:
                continue
            lines.add((page.number, i))
            for j in range(i - 1, max(-1, i - labels.before - 1), -1):
                if found[j] or not _may_hold(labels, text[j]):
                    break
                lines.add((page.number, j))
            for j in range(i + 1, min(len(text), i + labels.after + 1)):
                if found[j] or not _may_hold(labels, text[j]):
                    break
                lines.add((page.number, j))
    return lines


def _heads_a_column(lines: Sequence[str], i: int) -> bool:
    """A sum's word in a row of column headers ("Article Qty Unit cost Amount") names the
    column of the item amounts under it, not a sum: its line prints no amount and the
    next one is an item row (two amounts or more)."""
    below = lines[i + 1] if i + 1 < len(lines) else ""
    return amounts_on(lines[i]) == 0 and amounts_on(below) >= 2


def _in_a_sentence(line: str, hit: Hit, on: Sequence[Hit]) -> bool:
    """Whether a label runs on into a sentence: more words follow it on its line, other
    labels' words apart (a header row of labels), than a value has. A label qualified up
    to a colon ("Data wystawienia, z zastrzeżeniem art. 106na ust. 1 ustawy: 2023-11-30")
    has its value after the colon."""
    pieces, start = [], hit.end
    colon = line.find(":", hit.end)
    if colon >= 0 and not any(hit.end <= h.start < colon for h in on):
        start = colon + 1
    for other in sorted((h for h in on if h.start >= hit.end), key=lambda h: h.start):
        pieces.append(line[start : other.start])
        start = max(start, other.end)
    pieces.append(line[start:])
    # As the invoice rules read a label's value: a few words, a date counting as one.
    return not is_value(" ".join(pieces))


def _may_hold(labels: Labels, line: str) -> bool:
    """Whether a line next to a label may hold its value: any line, or for values only,
    a value's few words (a line of prose under a label is not its value)."""
    return labels.values is None or is_value(line)


def _text_of(pages: Sequence[PageText], lines: set[tuple[int, int]]) -> str:
    return "\n".join(
        line
        for page in pages
        for i, line in enumerate(page.text.split("\n"))
        if (page.number, i) in lines
    )


@dataclass(frozen=True)
class Hit:
    """A label on a line: who found it, its kind, and where it starts and ends."""

    find: Finder
    kind: str
    start: int
    end: int


def _labels_on(line: str) -> list[Hit]:
    """The labels on a line, each the longest starting at a word."""
    out: list[Hit] = []
    start = 0
    while start < len(line):
        if line[start].isspace():
            start += 1
            continue
        best: tuple[Finder, str, int] | None = None
        for find in FINDERS:
            hit = find(line[start:])
            if hit is not None and (best is None or hit[1] > best[2]):
                best = (find, hit[0], hit[1])
        if best is not None:
            out.append(Hit(best[0], best[1], start, start + best[2]))
            start += max(1, best[2])
            continue
        while start < len(line) and not line[start].isspace():
            start += 1
    return out
