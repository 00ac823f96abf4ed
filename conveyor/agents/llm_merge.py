"""The answers to a document's parts made one extraction: the requests of one attempt of
the LLM extractor, or the child tasks of a fan-out (`conveyor.agents.fanout`).

How the answers become one. Per type:
- invoice: header fields (number, dates, parties, currency, totals) from the first part
  that has each of them; line items concatenated in page order;
- contract: the first non-null value of each field; parties de-duplicated by name;
- generic: key-value pairs concatenated, exact repeats dropped.
Parts that disagree on a field keep the first value, with a note and a lower confidence,
unless exactly one of the values is printed in the document: that one wins.

Confidence. Each field found scores 0.95; 0.6 when parts disagreed on it; 0.4 when its
value is not printed in the document's text (`conveyor.agents.grounding`: a misread or
invented value, the error cross-checks cannot see); 0.1 when the model's value for it did
not validate and was left empty (`conveyor.llm.salvage`, with a note naming it); and at
most 0.5 when a failed cross-check names it. A key field not found scores 0. The
document's confidence is `document_confidence()` over those (shared with the offline
extractor), capped like a failed check (0.85) when some value is not in the text: the
model's answer is trusted as far as the document shows it and its numbers agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conveyor.agents.grounding import Evidence, grounded
from conveyor.documents.types import (
    FAILED_CHECK_CEILING,
    Extraction,
    cross_checks,
    make_extraction,
    model_for,
)

KEY_FIELDS = {
    "invoice": ["number", "issue_date", "vendor.name", "currency", "total"],
    "contract": ["parties", "effective_date", "term_months"],
    "generic": ["items"],
}


@dataclass
class Merged:
    data: dict[str, Any] = field(default_factory=dict)
    disagreements: dict[str, list[Any]] = field(default_factory=dict)


def extraction_of_parts(
    doc_type: str,
    merged: Merged,
    evidence: Evidence | None,
    *,
    notes: list[str],
    read_note: str | None,
    salvaged: Sequence[str],
    pages: int,
    extractor: str,
) -> Extraction:
    """One extraction from the merge of a document's parts (the requests of one attempt,
    or the child tasks of a fan-out): disagreements settled by what the text shows,
    every field grounded in it (`evidence`, None when pages were read from images) and
    cross-checked, `salvaged` fields (what failed validation) scored as such."""
    model = model_for(doc_type)
    for where, values in list(merged.disagreements.items()):
        shown = ", ".join(repr(v) for v in values[:3])
        settled = _settle(merged, where, values, evidence)
        if settled is None:
            notes.append(f"parts of the document disagree on {where} ({shown}); kept the first")
        else:
            notes.append(
                f"parts of the document disagree on {where} ({shown}); kept {settled!r}, "
                "the only one the text shows"
            )
    if read_note:
        notes.append(read_note)
    data = model.model_validate(merged.data)
    answer = data.model_dump(mode="json")
    fields = field_confidences(doc_type, answer, merged.disagreements, evidence)
    unseen = [w for w, score in fields.items() if score == UNGROUNDED]
    if unseen:
        notes.append(f"not printed in the document as answered: {', '.join(unseen)}")
    for name in dict.fromkeys(salvaged):
        fields[name] = SALVAGED
    checks = cross_checks(doc_type, data)
    if checks:
        fields = cap_implicated(fields, checks)
    extraction = make_extraction(
        doc_type,
        data,
        fields=fields,
        notes=notes,
        pages=pages,
        extractor=extractor,
        key_fields=KEY_FIELDS.get(doc_type),
    )
    if unseen:
        # As with a failed cross-check: a value the document does not show is a likely
        # error, wherever it is; the document is not one to trust without a look.
        ceiling = min(extraction.confidence, FAILED_CHECK_CEILING)
        extraction = extraction.model_copy(update={"confidence": ceiling})
    return extraction


def field_of(where: str) -> str:
    """The field a salvaged path belongs to: line_items.2.quantity is line_items."""
    parts = where.split(".")
    for i, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[:i])
    return where


def merge(doc_type: str, parts: Sequence[dict[str, Any]]) -> Merged:
    """One answer from the answers of a document's chunks, in page order."""
    merged = Merged()
    for part in parts:
        _merge_into(merged, merged.data, part, "", doc_type)
    return merged


def _merge_into(
    merged: Merged, into: dict[str, Any], part: dict[str, Any], prefix: str, doc_type: str
) -> None:
    for key, value in part.items():
        where = f"{prefix}{key}"
        current = into.get(key)
        if isinstance(value, dict):
            into.setdefault(key, {})
            _merge_into(merged, into[key], value, f"{where}.", doc_type)
        elif isinstance(value, list):
            into[key] = _merge_list(where, current or [], value)
        elif current is None:
            into[key] = value
        elif value is not None and value != current:
            seen = merged.disagreements.setdefault(where, [current])
            if value not in seen:
                seen.append(value)


def _settle(merged: Merged, where: str, values: list[Any], evidence: Evidence | None) -> Any:
    """Settle a disagreement by the text: if exactly one of the values is printed in the
    document, it wins and the field is no longer disputed. Else None (the first stays)."""
    if evidence is None:
        return None
    shown = [v for v in values if grounded(where, v, evidence) is True]
    if len(shown) != 1:
        return None
    *parents, leaf = where.split(".")
    node = merged.data
    for key in parents:
        node = node[key]
    node[leaf] = shown[0]
    del merged.disagreements[where]
    return shown[0]


def _merge_list(where: str, current: list[Any], new: list[Any]) -> list[Any]:
    if where == "parties":  # the same party named on several pages
        names = {_name_key(p.get("name")) for p in current if isinstance(p, dict)}
        out = list(current)
        for party in new:
            key = _name_key(party.get("name")) if isinstance(party, dict) else None
            if key and key in names:
                for known in out:
                    if _name_key(known.get("name")) == key and not known.get("role"):
                        known["role"] = party.get("role")
                continue
            names.add(key)
            out.append(party)
        return out
    if where == "items":  # key-value pairs: a repeated pair is one pair
        return current + [kv for kv in new if kv not in current]
    return current + new  # line items: each chunk has its own lines


def _name_key(name: Any) -> str | None:
    if not isinstance(name, str):
        return None
    return re.sub(r"[^0-9a-z]+", " ", name.casefold()).strip() or None


# ------------------------------------------------------------------------- confidence

FOUND, DISPUTED, IMPLICATED, UNGROUNDED, SALVAGED = 0.95, 0.6, 0.5, 0.4, 0.1


def field_confidences(
    doc_type: str,
    data: dict[str, Any],
    disagreements: dict[str, list[Any]],
    evidence: Evidence | None = None,
) -> dict[str, float]:
    """Per-field confidence, dotted names: found 0.95, disputed 0.6, not in the text 0.4,
    key field missing 0. Missing minor fields are left out: null is a fine answer for a
    due date the document does not print."""
    fields: dict[str, float] = {}
    for where, value in _leaves(data):
        if value in (None, "", []):
            continue
        if evidence is not None and grounded(where, value, evidence) is False:
            fields[where] = UNGROUNDED
        else:
            fields[where] = DISPUTED if where in disagreements else FOUND
    for key in KEY_FIELDS.get(doc_type, []):
        fields.setdefault(key, 0.0)
    return fields


def _leaves(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, dict):
            out.extend(_leaves(value, f"{prefix}{key}."))
        else:
            out.append((f"{prefix}{key}", value))  # a list is one field
    return out


def cap_implicated(fields: dict[str, float], checks: list[str]) -> dict[str, float]:
    """Fields a failed cross-check names ("subtotal", "line items", "due date") are
    not to be trusted more than IMPLICATED."""
    text = " ".join(checks).lower()
    out = dict(fields)
    for where, score in fields.items():
        label = where.rsplit(".", 1)[-1].replace("_", " ")
        if label in text or (label == "line items" and "line " in text):
            out[where] = min(score, IMPLICATED)
    return out
