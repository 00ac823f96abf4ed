"""The simulator's answer mode: extraction requests answered from ground truth, with errors.

    responder = TruthResponder.from_dir("truth/", error_rate=0.1, seed=7)
    Simulator(responder=responder)
    # or: python -m conveyor.testing.simulator --truth truth/ --error-rate 0.1

The truth is a folder of JSON files, one per document, named by a key that the request
carries: a file `invoice-0007.json` answers every request whose messages contain the text
"invoice-0007" (the LLM extractor names the document it reads in each request, so every
chunk of it is recognised). The longest matching key wins. A file holds
`{"type": "invoice", "data": {...}}`, or the data alone.

What a request gets back, as JSON of the schema it asked for:
- a known document: its truth, where each field (each leaf of the data, each line item)
  is independently wrong with probability `error_rate`: left out (null), or changed (a
  number off by a little, a date off by a day, a word swapped). Line items are given only
  when their description appears in the request's text, so a document sent in chunks has
  each chunk answer for its own lines, as a model would;
- an unknown one: the schema's skeleton (objects of nulls, empty lists): "found nothing".

The errors are drawn from a generator seeded by `seed` and the request itself, so the same
request always gets the same answer (a model at temperature 0), and a run is reproducible.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import random
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from conveyor.testing.protocol import ChatCompletionRequest, TextPart

_DECIMAL = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


class TruthResponder:
    def __init__(self, truth: dict[str, Any], *, error_rate: float = 0.0, seed: int = 0) -> None:
        if not 0 <= error_rate <= 1:
            raise ValueError(f"the error rate must be between 0 and 1, not {error_rate}")
        self.truth = {key: _data_of(value) for key, value in truth.items()}
        # Longest first: "contract-0001-200p" must win over "contract-0001".
        self._keys = sorted(self.truth, key=len, reverse=True)
        self.error_rate = error_rate
        self.seed = seed

    @classmethod
    def from_dir(cls, folder: Path | str, **options: Any) -> TruthResponder:
        folder = Path(folder)
        if not folder.is_dir():
            raise ValueError(f"no truth folder at {str(folder)!r}")
        truth = {}
        for path in sorted(folder.glob("*.json")):
            try:
                truth[path.stem] = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise ValueError(f"cannot read the truth file {str(path)!r}: {exc}") from None
        if not truth:
            raise ValueError(f"the truth folder {str(folder)!r} has no *.json file")
        return cls(truth, **options)

    def add(self, key: str, entry: Any) -> None:
        """Know one more document (safe while serving: the key list is swapped whole)."""
        self.truth[key] = _data_of(entry)
        self._keys = sorted(self.truth, key=len, reverse=True)

    def __call__(self, request: ChatCompletionRequest) -> str:
        text = _request_text(request)
        schema = _schema_of(request)
        key = next((k for k in self._keys if k in text), None)
        if key is None:
            return json.dumps(skeleton(schema) if schema else {})
        digest = hashlib.sha256(f"{self.seed}:{text}".encode()).digest()
        rng = random.Random(digest)
        answer = self._visible(self.truth[key], text)
        return json.dumps(self._spoil(answer, rng))

    @staticmethod
    def _visible(data: Any, text: str) -> Any:
        """The truth as far as this request's text shows it: line items only if their
        description is in the text."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        items = out.get("line_items")
        if isinstance(items, list):
            out["line_items"] = [
                item
                for item in items
                if not isinstance(item, dict)
                or not item.get("description")
                or str(item["description"]) in text
            ]
        return out

    def _spoil(self, value: Any, rng: random.Random) -> Any:
        """A copy of `value` where each field (a leaf of an object) and each list item
        is wrong with probability error_rate: a wrong item is missed, or one of its
        values misread."""
        if isinstance(value, dict):
            return {k: self._spoil(v, rng) for k, v in value.items()}
        if isinstance(value, list):
            out = []
            for item in value:
                if not self._unlucky(rng):
                    out.append(item)
                elif rng.random() >= 0.5:  # else: the item is missed
                    out.append(_misread_one(item, rng))
            return out
        if value is None or not self._unlucky(rng):
            return value
        if rng.random() < 0.5:
            return None  # missed
        return _changed(value, rng)

    def _unlucky(self, rng: random.Random) -> bool:
        return self.error_rate > 0 and rng.random() < self.error_rate


def _data_of(entry: Any) -> Any:
    if isinstance(entry, dict) and "data" in entry and set(entry) <= {"type", "data", "name"}:
        return entry["data"]
    return entry


def _misread_one(item: Any, rng: random.Random) -> Any:
    """The item with one of its (non-null) values read wrong."""
    if not isinstance(item, dict):
        return _changed(item, rng)
    keys = [k for k, v in item.items() if v is not None and not isinstance(v, dict | list)]
    if not keys:
        return item
    key = rng.choice(keys)
    return {**item, key: _changed(item[key], rng)}


def _changed(value: Any, rng: random.Random) -> Any:
    """A plausible wrong reading of `value`, of the same JSON type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice([-1, 1, 10])
    if isinstance(value, float):
        return round(value * rng.choice([0.9, 1.1]), 2)
    if isinstance(value, str):
        if _DECIMAL.match(value):
            try:
                return str(Decimal(value) + Decimal(rng.choice(["1", "-1", "0.10", "9"])))
            except InvalidOperation:
                pass
        try:
            day = datetime.date.fromisoformat(value)
        except ValueError:
            pass
        else:
            return (day + datetime.timedelta(days=rng.choice([-1, 1, 30]))).isoformat()
        if len(value) == 3 and value.isupper():
            return rng.choice(["USD", "EUR", "GBP", "CHF"])
        words = value.split()
        if len(words) > 1:
            i = rng.randrange(len(words))
            words[i] = words[i][::-1]
            return " ".join(words)
        return value + "X"
    return value


def _request_text(request: ChatCompletionRequest) -> str:
    parts = []
    for message in request.messages:
        content = message.content
        if isinstance(content, str):
            parts.append(content)
        elif content:
            parts.extend(p.text for p in content if isinstance(p, TextPart))
    return "\n".join(parts)


def _schema_of(request: ChatCompletionRequest) -> dict[str, Any] | None:
    fmt = request.response_format
    if fmt is None or fmt.json_schema is None:
        return None
    schema = fmt.json_schema.get("schema")
    return schema if isinstance(schema, dict) else None


def skeleton(schema: dict[str, Any]) -> Any:
    """The emptiest value of a JSON schema: null where allowed, else {} of skeletons, []."""
    options = schema.get("anyOf") or schema.get("oneOf")
    types = schema.get("type")
    if options:
        if any(o.get("type") == "null" for o in options):
            return None
        return skeleton(options[0])
    if isinstance(types, list):
        if "null" in types:
            return None
        types = types[0]
    if types == "object":
        return {k: skeleton(v) for k, v in schema.get("properties", {}).items()}
    if types == "array":
        return []
    return None
