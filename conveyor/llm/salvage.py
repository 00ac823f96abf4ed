"""Keep what validates of a model's answer: one bad field is not a bad document.

    salvaged = salvage(answer_json, Invoice)
    salvaged.value      # an Invoice; the fields that did not validate are null
    salvaged.dropped    # ["line_items.2.quantity"]: what was nulled, dotted paths
    salvaged.repaired   # ["line_items.0.quantity: '3 Piece' -> 3"]
    salvaged.problems   # ["line_items.2.quantity: Input should be a valid decimal"]

A field that fails validation is first given a second reading when it is a number written
with a unit or a currency (`3 Piece`, `EUR 12,50`, `12.50 €`): the number is kept when it
is unambiguous (see `plain_number`). What still fails is set to null (to the field's
empty value for a list), and validation runs again, until the answer fits or nothing more
can be nulled. An answer that is not a JSON object at all cannot be salvaged: the caller
says so (`conveyor.llm.client.LLMAnswerInvalid`).

An answer cut at the token limit (max_tokens) is not JSON, but what it wrote before the
member it was cut in is: `cut_members` keeps the object's complete top-level members and
names the one cut. That member is dropped whole (a list of line items cut after its
third item is not the invoice's list, and a wrong list is worse than none); the members
the model had not reached are simply absent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

MAX_ROUNDS = 50  # each round nulls at least one field: an answer has fewer than this

_NUMBER_ERRORS = ("decimal", "int", "float")
_NUMBER = re.compile(r"[-+]?[0-9][0-9.,' \u00a0\u202f]*")


@dataclass
class Salvaged(Generic[M]):
    value: M
    dropped: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why each was dropped
    cut: str | None = None  # the member the answer was cut in at the token limit

    @property
    def whole(self) -> bool:
        return not self.dropped and self.cut is None


def salvage(data: Any, schema: type[M]) -> Salvaged[M]:
    """`data` (parsed JSON) as `schema`, keeping every field that validates. Raises
    ValidationError only when `data` is not an object the schema could hold at all."""
    if not isinstance(data, dict):
        return Salvaged(schema.model_validate(data))  # raises: nothing to keep
    dropped: list[str] = []
    repaired: list[str] = []
    problems: list[str] = []
    for _ in range(MAX_ROUNDS):
        try:
            return Salvaged(schema.model_validate(data), dropped, repaired, problems)
        except ValidationError as exc:
            progressed = False
            for error in exc.errors():
                where = tuple(error["loc"])
                if not where:
                    raise
                if error["type"] == "extra_forbidden":
                    parent, key = _parent(data, where)
                    if parent is not None:  # a key the schema does not have: it goes
                        del parent[key]
                        dropped.append(".".join(str(p) for p in where))
                        problems.append(f"{dropped[-1]}: {error['msg']}")
                        progressed = True
                elif _repair(data, where, error["type"], repaired):
                    progressed = True
                elif _drop(data, where):
                    name = ".".join(str(p) for p in where)
                    if name not in dropped:
                        dropped.append(name)
                        problems.append(f"{name}: {error['msg']}")
                    progressed = True
            if not progressed:
                raise
    return Salvaged(schema.model_validate(data), dropped, repaired, problems)


def _repair(data: dict[str, Any], where: tuple[Any, ...], kind: str, repaired: list[str]) -> bool:
    """Read a number with its unit as the number, in place; whether it did."""
    if not any(word in kind for word in _NUMBER_ERRORS):
        return False
    parent, key = _parent(data, where)
    if parent is None:
        return False
    value = parent[key]
    if not isinstance(value, str):
        return False
    number = plain_number(value)
    if number is None or number == value:
        return False
    parent[key] = number
    repaired.append(f"{'.'.join(str(p) for p in where)}: {value!r} -> {number}")
    return True


def _drop(data: dict[str, Any], where: tuple[Any, ...]) -> bool:
    """Null the value at `where` (or the nearest thing that holds it); whether it did."""
    # An error inside a union names the branch type last ("quantity", "decimal"): walk the
    # path as far as the data goes, and null what it reaches.
    node: Any = data
    path: list[Any] = []
    for step in where:
        if not _holds(node, step):
            break
        path.append(step)
        node = node[step]
    if not path:
        return False
    parent, key = _parent(data, tuple(path))
    if parent is None:
        return False
    current = parent[key]
    if isinstance(parent, list):
        # A list item that is not an object: it goes; one that is, is kept field by field.
        del parent[key]
        return True
    if current is None:
        if isinstance(parent, dict) and len(path) == len(where):
            del parent[key]  # null refused (a list field): leave it to its default
            return True
        return False
    parent[key] = None
    return True


def _holds(node: Any, step: Any) -> bool:
    if isinstance(node, dict):
        return step in node
    return isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node)


def _parent(data: dict[str, Any], where: tuple[Any, ...]) -> tuple[Any, Any]:
    node: Any = data
    for step in where[:-1]:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return None, None
    key = where[-1]
    if isinstance(node, dict) and key in node:
        return node, key
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node, key
    return None, None


def plain_number(text: str) -> str | None:
    """The one number in `text` as a plain decimal ('12.50'), when it is unambiguous:
    a currency or unit beside it is fine (`3 Piece`, `EUR 12,50`, `1.234,56 €`); two
    numbers, or `1,234` (a thousand, or one and a bit?) are not."""
    found = [m.group(0).strip(" '\u00a0\u202f") for m in _NUMBER.finditer(text)]
    found = [f for f in found if f]
    if len(found) != 1:
        return None
    raw = found[0].replace(" ", "").replace("'", "").replace("\u00a0", "").replace("\u202f", "")
    sign = "-" if raw.startswith("-") else ""
    raw = raw.lstrip("+-")
    dots, commas = raw.count("."), raw.count(",")
    if dots and commas:
        decimal = "." if raw.rfind(".") > raw.rfind(",") else ","
        group = "," if decimal == "." else "."
        whole, _, fraction = raw.rpartition(decimal)
        if raw.count(decimal) != 1 or not _grouped(whole, group):
            return None
        return f"{sign}{whole.replace(group, '')}.{fraction}"
    sep = "." if dots else "," if commas else ""
    if not sep:
        return sign + raw
    parts = raw.split(sep)
    if len(parts) == 2 and len(parts[1]) != 3:
        return f"{sign}{parts[0]}.{parts[1]}"  # 12,50 or 12.5: a decimal point
    if len(parts) == 2 and sep == "." and parts[0] == "0":
        return f"{sign}0.{parts[1]}"  # 0.125
    if len(parts) > 2 and _grouped(raw, sep):
        return sign + raw.replace(sep, "")  # 1.234.567: groups of thousands
    return None  # 1,234 or 1.234: a thousand and more, or one and a bit


def _grouped(whole: str, group: str) -> bool:
    parts = whole.split(group)
    return (
        1 <= len(parts[0]) <= 3
        and all(len(p) == 3 for p in parts[1:])
        and all(p.isdigit() for p in parts)
    )


def cut_members(text: str) -> tuple[dict[str, Any], str] | None:
    """The complete top-level members of a JSON object cut short, and the name of the
    member it was cut in ("" when the cut came before any key); None when `text` does
    not start an object, or is a complete one (nothing was cut)."""
    start = text.find("{")
    if start < 0 or text[:start].strip().strip("`").removeprefix("json").strip():
        return None
    depth, in_string, escaped = 0, False, False
    last_comma = None  # where the last complete top-level member ends
    for i in range(start, len(text)):
        char = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return None  # the object is complete: not a cut one
        elif char == "," and depth == 1:
            last_comma = i
    if last_comma is None:
        kept, rest = "{}", text[start + 1 :]
    else:
        kept, rest = text[start:last_comma] + "}", text[last_comma + 1 :]
    try:
        members = json.loads(kept)
    except ValueError:
        return None
    name = _KEY.match(rest)
    return members, (name.group(1) if name else "")


_KEY = re.compile(r'\s*"((?:[^"\\]|\\.)*)"?')  # the key itself may be cut
