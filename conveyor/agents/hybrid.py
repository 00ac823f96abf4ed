"""The hybrid extractor: the rules first, the model only for what they cannot vouch for.

    extraction = await extract_hybrid(client, task, text, "invoice", name=name)

1. The offline extractor reads the document (`conveyor.agents.offline`: no tokens).
2. If every key field it found scores at least TRUST and its cross-checks all pass, that
   is the answer: the model is not asked. Fields the model could not improve on are not a
   reason to ask it: a non-empty value the rules read is only ever replaced on the
   arithmetic's word (step 4), so a doubtful customer name alone is not worth a request.
3. Otherwise the model is asked for the top-level fields the rules did not vouch for
   (score below TRUST, empty, or named by a failed check), with the schema cut down to
   them, the vouched-for values given as facts in the prompt, and of the text only the
   regions that hold those fields (`conveyor.agents.regions`: the lines around their
   labels). Only what the merge can use is asked for: empty fields, and the amounts when
   doubtful; a value the rules read is kept whatever the model says (step 4), so asking
   for it would be paid for nothing, and empty minor fields alone are not worth a request.
   A minor field whose labels the text does not print is not asked for; line items, which
   have no labels and whose answer is the length of the table, only when the rules found
   none. When two key fields or more are empty, or one is whose labels the text does not
   print (a label the rules do not know), the model is asked for the whole document (full
   schema and text, the rules' readings given as a first, unsure reading).
4. The answers are merged: a vouched-for field keeps the rules' value; an empty one takes
   the model's, if the text prints it (`conveyor.agents.grounding`), and a date only if
   the text prints it as the value of one of its field's labels (BY_LABEL: a due date the
   model gives for an invoice that labels none, from beside another label, or from a
   sentence that names the field, is not taken; nor is a date field asked for at all where
   no label of it has a date by it); where the two disagree on the amounts (line items,
   subtotal, tax, total), every combination of the two readings is cross-checked and the
   one with the fewest failed checks wins (ties: the rules' reading). Other disagreements
   keep the rules' value: nothing but the arithmetic can say which of two printed values is right.

Confidence: the rules' score for a field the rules gave; the LLM extractor's for a field
the model gave (found, not printed, implicated by a check: `conveyor.agents.llm_merge`).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from typing import Any

from conveyor.agents.grounding import Evidence, grounded
from conveyor.agents.llm import extract_llm
from conveyor.agents.llm_budget import DEFAULT_CHUNK_TOKENS
from conveyor.agents.llm_merge import KEY_FIELDS, cap_implicated, field_confidences
from conveyor.agents.offline import extract_offline
from conveyor.agents.regions import LABELS, Region, excerpt_of, regions
from conveyor.documents.text import DocumentText
from conveyor.documents.types import (
    Extraction,
    cross_checks,
    json_schema,
    make_extraction,
    model_for,
)
from conveyor.llm.client import LLMAnswerInvalid, LLMClient
from conveyor.task import Task

TRUST = 0.9
"""A field the rules score this high is right 99-100 % of the time on realdocs
(benchmarks/realdocs.py, text-only: 245 fields >= 0.9, all right)."""

BY_LABEL = ("issue_date", "due_date")
"""Fields the model's value for is taken only where the text prints it by one of the
field's labels (`conveyor.agents.regions`): an invoice prints several dates (issue,
delivery, order, period, due) of the same form, and only the label says which is which."""

ARITHMETIC = {
    "invoice": ("line_items", "subtotal", "tax", "total"),
}
"""The fields the cross-checks tie together, per type: where they arbitrate."""


async def extract_hybrid(
    client: LLMClient,
    task: Task | None,
    text: DocumentText,
    doc_type: str,
    *,
    name: str | None = None,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    deadline: float | None = None,
) -> Extraction:
    offline = await asyncio.to_thread(extract_offline, text, doc_type)
    plan = await asyncio.to_thread(plan_for, doc_type, offline, text)
    if not plan.ask:
        offline.notes.append(
            f"every key field read by the rules scored >= {TRUST} and the checks agree: "
            "the model was not asked"
        )
        offline.extractor = f"hybrid:{client.model}"
        return offline
    schema = schema_for_fields(json_schema(doc_type), plan.ask) if not plan.whole else None
    sent = text
    if plan.regions is not None and not plan.whole:
        sent = excerpt_of(text, [plan.regions[f] for f in plan.ask])
    try:
        answer = await extract_llm(
            client,
            task,
            sent,
            doc_type,
            name=name,
            chunk_tokens=chunk_tokens,
            deadline=deadline,
            schema=schema,
            hints=hints_for(offline, plan),
        )
    except LLMAnswerInvalid as exc:
        # An answer no better next time (not JSON, cut, refused): the rules' reading
        # stands, at its own confidence. An outage is raised: a retry may get an answer.
        offline.notes.append(f"the model was asked and gave no usable answer: {exc}")
        offline.extractor = f"hybrid:{client.model}"
        return offline
    evidence = await asyncio.to_thread(Evidence.of, text.text) if text.text.strip() else None
    return merged(doc_type, offline, answer, plan, evidence, client.model, text)


class Plan:
    """What to ask the model: top-level fields (`ask`), all of them (`whole`), and where
    the text prints each field that has labels (`regions`; None: not looked for)."""

    def __init__(
        self,
        ask: list[str],
        vouched: list[str],
        whole: bool,
        regions: dict[str, Region] | None = None,
    ) -> None:
        self.ask = ask
        self.vouched = vouched  # dotted fields the rules vouch for
        self.whole = whole
        self.regions = regions

    def region(self, top: str) -> Region | bool | None:
        """The field's region; False when the field has labels and the text prints
        none of them; None when regions are not known or the field has no labels."""
        if self.regions is None or top not in BY_LABEL:
            return None
        return self.regions.get(top, False)


def plan_for(doc_type: str, offline: Extraction, text: DocumentText | None = None) -> Plan:
    """What to ask the model about a document the rules read as `offline`; with its
    `text`, only the fields whose regions it prints (an invoice's; other types have no
    regions), and line items only when the rules found none."""
    found = None
    if text is not None and doc_type == "invoice":
        found = regions(text, [*LABELS, "line_items"])
    plan = _fields_to_ask(doc_type, offline)
    plan.regions = found
    if found is None or plan.whole:
        return plan
    keys = {k.split(".")[0] for k in KEY_FIELDS.get(doc_type, [])}
    if any(top in keys and top not in found for top in plan.ask):
        # A key field the rules missed under a label they do not know: only the whole
        # text can show the model where it is.
        plan.ask, plan.whole = list(offline.data), True
        return plan
    plan.ask = [
        top
        for top in plan.ask
        if top in found and (top != "line_items" or _empty(offline.data.get(top)))
    ]
    return plan


def _fields_to_ask(doc_type: str, offline: Extraction) -> Plan:
    keys = KEY_FIELDS.get(doc_type, [])
    values = _leaves(offline.data)
    vouched = [
        where
        for where, score in offline.fields.items()
        if score >= TRUST and values.get(where) not in (None, "", [])
    ]
    sure = [k for k in keys if k in vouched]
    if len(sure) == len(keys) and not offline.checks:
        return Plan([], vouched, whole=False)
    missing = [k for k in keys if values.get(k) in (None, "", [])]
    if len(missing) >= max(2, len(keys) // 2):
        # The rules lost the layout: the model reads it all.
        return Plan(list(offline.data), vouched, whole=True)
    # The model's answer is only used to fill what the rules left empty, and on the
    # arithmetic's word for the amounts (`merged`): only those are worth asking for.
    arithmetic = ARITHMETIC.get(doc_type, ())
    implicated = {w for w, s in cap_implicated(offline.fields, offline.checks).items() if s < TRUST}
    ask = []
    for top, value in offline.data.items():
        under = [w for w in offline.fields if w == top or w.startswith(f"{top}.")]
        doubtful = [w for w in under if w not in vouched or w in implicated]
        if (top in arithmetic and (doubtful or not under)) or _has_empty(value):
            ask.append(top)
    # Empty minor fields alone (a due date, an address the invoice may not print) are not
    # worth a request: one is made for a missing key field or doubtful amounts.
    worth = missing or [top for top in ask if top in arithmetic]
    return Plan(ask if worth else [], vouched, whole=False)


def _has_empty(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_empty(v) for v in value.values())
    return value in (None, "", [])


def schema_for_fields(schema: dict[str, Any], keep: list[str]) -> dict[str, Any]:
    """The type's schema with only the top-level properties in `keep`."""
    out = dict(schema)
    out["properties"] = {k: v for k, v in schema["properties"].items() if k in keep}
    out["required"] = [k for k in schema.get("required", []) if k in keep]
    return out


def hints_for(offline: Extraction, plan: Plan) -> str:
    values = _leaves(offline.data)
    if plan.whole:
        found = {w: v for w, v in values.items() if v not in (None, "", [])}
        if not found:
            return ""
        return "A first reading by rules (unsure; check each against the text): " + json.dumps(
            found, ensure_ascii=False
        )
    known = {w: values[w] for w in plan.vouched if w.split(".")[0] not in plan.ask}
    asked = ", ".join(plan.ask)
    facts = f" Already read, certain: {json.dumps(known, ensure_ascii=False)}." if known else ""
    where = (
        " What follows are the lines of the document near the labels of these fields."
        if plan.regions is not None
        else ""
    )
    return f"Answer only these fields: {asked}.{facts}{where}"


def merged(
    doc_type: str,
    offline: Extraction,
    answer: Extraction,
    plan: Plan,
    evidence: Evidence | None,
    model_name: str,
    text: DocumentText | None = None,
) -> Extraction:
    """One extraction from the rules' and the model's, as the module says."""
    ours, theirs = offline.data, answer.data
    data = copy.deepcopy(ours)
    source: dict[str, str] = {}  # top-level field -> "rules" or "model"
    unseen: list[str] = []
    unlabelled: list[str] = []

    def shown(where: str, value: Any) -> bool:
        # A value the text does not print is the likeliest to be wrong (a tax of 0 on an
        # invoice that shows none): an empty field is better left empty than filled so.
        # A date must be printed by one of its field's labels (BY_LABEL): a date
        # printed elsewhere on the page is another date.
        if evidence is None or isinstance(value, (list, dict)):
            return True
        region = plan.region(where.split(".")[0])
        if region is False:
            unlabelled.append(where)
            return False
        near = evidence
        if isinstance(region, Region) and text is not None:
            near = Evidence.of(region.text(text))
        if grounded(where, value, near) is False:
            unseen.append(where)
            return False
        return True

    for top in plan.ask:
        mine, other = ours.get(top), theirs.get(top)
        if isinstance(mine, dict) and isinstance(other, dict):
            # Sub-fields: the rules' vouched ones stay, empty ones take the model's.
            for key, value in other.items():
                where = f"{top}.{key}"
                if _empty(mine.get(key)) and not _empty(value) and shown(where, value):
                    data[top][key] = value
                    source[where] = "model"
        elif _empty(mine) and not _empty(other) and shown(top, other):
            data[top] = copy.deepcopy(other)
            source[top] = "model"
    model = model_for(doc_type)
    disputed = [
        f
        for f in ARITHMETIC.get(doc_type, ())
        if f in plan.ask and not _empty(theirs.get(f)) and theirs.get(f) != data.get(f)
    ]
    notes = list(offline.notes)
    if disputed:
        best: tuple[int, int] | None = None
        chosen = data
        for picks in itertools.product((False, True), repeat=len(disputed)):
            trial = copy.deepcopy(data)
            for f, take in zip(disputed, picks, strict=True):
                if take:
                    trial[f] = copy.deepcopy(theirs[f])
            rank = (len(cross_checks(doc_type, model.model_validate(trial))), sum(picks))
            if best is None or rank < best:
                best, chosen = rank, trial
        taken = [f for f in disputed if chosen.get(f) != data.get(f)]
        for f in taken:
            source[f] = "model"
        if taken:
            notes.append(f"the amounts add up with the model's {', '.join(taken)}")
        data = chosen
    value = model.model_validate(data)
    fields = dict(offline.fields)
    by_model = field_confidences(doc_type, value.model_dump(mode="json"), {}, evidence)
    for where, score in by_model.items():
        if source.get(where) == "model" or source.get(where.split(".")[0]) == "model":
            fields[where] = min(score, answer.fields.get(where, score))
    checks = cross_checks(doc_type, value)
    if checks:
        fields = cap_implicated(fields, checks)
    asked = "the whole document" if plan.whole else ", ".join(plan.ask)
    used = sorted(source)
    notes.append(
        f"the model was asked for {asked}; its answer was used for "
        f"{', '.join(used) if used else 'nothing'}"
    )
    if unseen:
        notes.append(
            f"left empty, the model's value not being printed where the text labels it: "
            f"{', '.join(unseen)}"
        )
    if unlabelled:
        notes.append(
            f"left empty, the text labelling none (the model's value not taken): "
            f"{', '.join(unlabelled)}"
        )
    notes.extend(n for n in answer.notes if n not in notes)
    extraction = make_extraction(
        doc_type,
        value,
        fields=fields,
        notes=notes,
        pages=offline.pages,
        extractor=f"hybrid:{model_name}",
        key_fields=KEY_FIELDS.get(doc_type),
    )
    return extraction


def _empty(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_empty(v) for v in value.values())
    return value in (None, "", [])


def _leaves(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out
