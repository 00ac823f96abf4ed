"""A reviewer's corrections applied to a result: the next version, validated, or refused.

A correction names a field by its dotted path, as the result's per-field confidences do
(`total`, `vendor.name`, `line_items.0.amount`), and gives its new value (JSON; null for
"not in the document"). Pure functions, no database: `conveyor.reviews.queue` calls them
before it opens the transaction that stores the version.

- A document agent's result (an Extraction: `type`, `data`, `fields`, ...) is corrected in
  its `data`, and the corrected data must pass the document type's model
  (conveyor.documents.types): a date is a date, an amount a decimal, an unknown field is
  refused. Its failed cross-checks are computed again for the new version; each corrected
  field's confidence becomes 1.0 (a person vouched for it).
- Any other result (a plain agent's dict) is corrected at its top level, without a type.

Anything refused raises InvalidCorrection with every problem in its message; nothing is
stored then.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from conveyor.documents.types import DOCUMENT_TYPES, cross_checks
from conveyor.errors import InvalidTask

MAX_CORRECTIONS = 500
MAX_PATH = 500


class InvalidCorrection(InvalidTask):
    """A correction the result's type refuses, or that names no field of it."""


@dataclass(frozen=True)
class Corrected:
    result: dict[str, Any]  # the new version of the whole result
    changes: dict[str, dict[str, Any]]  # path -> {"from": old, "to": new}, changed fields only


_MISSING = object()


def is_extraction(result: Any) -> bool:
    """A document agent's result: a typed extraction whose `data` is corrected."""
    return (
        isinstance(result, dict)
        and result.get("type") in DOCUMENT_TYPES
        and isinstance(result.get("data"), dict)
    )


def reviewed_fields(result: Any) -> dict[str, float | None]:
    """The fields a review vouches for, with the machine's confidence in each: an
    extraction's per-field confidences; a plain result's top-level keys but `confidence`."""
    if is_extraction(result):
        fields = result.get("fields")
        if isinstance(fields, dict):
            return {k: float(v) if isinstance(v, int | float) else None for k, v in fields.items()}
        return {}
    if isinstance(result, dict):
        return {k: None for k in result if k != "confidence"}
    return {}


def apply(result: Any, corrections: dict[str, Any]) -> Corrected:
    """The result with `corrections` applied and checked; raises InvalidCorrection."""
    if not isinstance(result, dict):
        raise InvalidCorrection("this task's result is not an object: it has no fields to correct")
    if not corrections:
        raise InvalidCorrection("a correction needs at least one field")
    if len(corrections) > MAX_CORRECTIONS:
        raise InvalidCorrection(f"at most {MAX_CORRECTIONS} fields in one correction")
    extraction = is_extraction(result)
    target = copy.deepcopy(result["data"] if extraction else result)
    problems: list[str] = []
    changes: dict[str, dict[str, Any]] = {}
    for path, value in corrections.items():
        if not path or len(path) > MAX_PATH:
            problems.append(f"{path[:40]!r}: not a field name")
            continue
        if not extraction and path == "confidence":
            problems.append("'confidence' is the machine's score, not a field to correct")
            continue
        old = _get(target, path)
        try:
            _set(target, path, value)
        except LookupError as exc:
            problems.append(f"{path}: {exc}")
            continue
        if old is _MISSING or old != value:
            changes[path] = {"from": None if old is _MISSING else old, "to": value}
    if problems:
        raise InvalidCorrection("; ".join(problems))
    if not changes:
        raise InvalidCorrection(
            "every corrected field already has that value: accept the result instead"
        )
    if not extraction:
        return Corrected(result=target, changes=changes)
    doc_type = result["type"]
    try:
        data = DOCUMENT_TYPES[doc_type].model_validate(target)
    except ValidationError as exc:
        raise InvalidCorrection(_describe(doc_type, exc)) from None
    new = copy.deepcopy(result)
    new["data"] = data.model_dump(mode="json")
    new["checks"] = cross_checks(doc_type, data)
    fields = dict(new.get("fields") or {})
    for path in changes:
        fields[path] = 1.0
    new["fields"] = fields
    # What the model made of the value (an amount "12.5" -> "12.50" stays "12.5") is what
    # the version records as its "to".
    for path, change in changes.items():
        stored = _get(new["data"], path)
        change["to"] = None if stored is _MISSING else stored
    return Corrected(result=new, changes=changes)


def _describe(doc_type: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ())) or "the data"
        problems.append(f"{where}: {error.get('msg')}")
    return f"the corrected {doc_type} is not valid: " + "; ".join(problems)


def _steps(path: str) -> list[str]:
    return path.split(".")


def _get(node: Any, path: str) -> Any:
    for step in _steps(path):
        if isinstance(node, dict):
            if step not in node:
                return _MISSING
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            return _MISSING
    return node


def _set(node: Any, path: str, value: Any) -> None:
    """Set `path` in `node`; a missing key of an object is added (the type's model then
    says whether it is a field), a missing list item is refused."""
    steps = _steps(path)
    for i, step in enumerate(steps[:-1]):
        if isinstance(node, dict):
            if step not in node or node[step] is None:
                node[step] = {}
            node = node[step]
        elif isinstance(node, list):
            node = node[_index(node, step, ".".join(steps[: i + 1]))]
        else:
            raise LookupError(f"{'.'.join(steps[:i])} is not an object or a list")
    last = steps[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list):
        node[_index(node, last, path)] = value
    else:
        raise LookupError(f"{'.'.join(steps[:-1])} is not an object or a list")


def _index(items: list[Any], step: str, where: str) -> int:
    if not (step.isascii() and step.isdigit()) or int(step) >= len(items):
        raise LookupError(f"no item {where} (the list has {len(items)})")
    return int(step)
