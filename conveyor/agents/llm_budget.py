"""What a request to the model costs, in tokens, before it is sent: the LLM extractor's
prompt (SYSTEM_PROMPT), the unit of a request (`Chunk`: pages of text, or scanned pages as
images), how long its answer may be, and the estimate admission reserves for a whole
document task.

How long an answer may be (`answer_limit`, sent as `max_tokens`): twice the chunk's text
(a page restated as JSON, keys and all) plus the type's answer budget. An answer can say
no more than what it reads; one that goes on is a loop, and a model held to a grammar may
loop until the server's context is full (seen with the stock llama.cpp server: 1,088
tokens and counting for an invoice without line items, 14 minutes on a CPU). Bounded, it
is cut, and the fields it completed before the cut are kept (`conveyor.llm.salvage`:
the field it was cut in is dropped whole, a cut list of line items not being the list),
with a note; an answer cut before it completed one field is a clear, permanent attempt
error (`LLMAnswerCut`), or the rules' reading in hybrid.

Tokens are estimated as the simulator and OpenAI's rule of thumb do: one per four
characters.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Any

from conveyor.documents.types import LineItem, json_schema, model_for

CHARS_PER_TOKEN = 4
DEFAULT_CHUNK_TOKENS = 6000
TOKENS_PER_PAGE = 800  # a dense page of text, for estimates before the text is read
ANSWER_TOKENS = {"invoice": 600, "contract": 300, "generic": 800}

SYSTEM_PROMPT = (
    "You read business documents and extract their data as JSON of the given schema. "
    "Use only what the document shows; null for anything it does not state, never a guess. "
    "Dates as YYYY-MM-DD; amounts and quantities as plain decimals ('1234.56', no thousands "
    "separator, no currency sign); currency as its ISO 4217 code. "
    "A long document comes in parts: extract what this part shows."
)


@dataclass(frozen=True)
class Chunk:
    pages: tuple[int, ...]  # 1-based page numbers
    text: str = ""
    images: tuple[str, ...] = ()  # data: URLs of PNGs

    @property
    def label(self) -> str:
        first, last = self.pages[0], self.pages[-1]
        return f"page {first}" if first == last else f"pages {first}-{last}"


def text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def answer_limit(doc_type: str, chunk: Chunk) -> int:
    """The most tokens an answer about `chunk` may take (the module says why)."""
    read = text_tokens(chunk.text) + TOKENS_PER_PAGE * len(chunk.images)
    return 2 * read + ANSWER_TOKENS.get(doc_type, ANSWER_TOKENS["generic"])


def framing_tokens() -> int:
    """Prompt tokens of a request besides its pages and any schema: the instructions and
    the framing of the messages (roles, the document's name, the part's label)."""
    return text_tokens(SYSTEM_PROMPT) + 100


def overhead_tokens(doc_type: str) -> int:
    """Prompt tokens of a request besides the pages: instructions, schema, framing. The
    schema is in the prompt on every rung of `conveyor.llm.formats` but the first, so a
    chunk leaves room for it."""
    schema = json.dumps(json_schema(doc_type), separators=(",", ":"))
    return framing_tokens() + text_tokens(schema)


# What an answer holds, for the types whose answer grows with the document: an invoice's
# header fields (names, addresses, a tax id, its number and dates, three amounts: about
# 250 characters as printed) and one item per line item, each its description, quantity
# and two amounts (about 50 characters as printed). Keys, quotes and nulls are counted
# from the type's empty answer (`answer_chars`), so a field added to the schema is
# counted without a change here.
HEAD_VALUE_CHARS = {"invoice": 250}
ROW_VALUE_CHARS = {"invoice": 50}


@functools.cache
def answer_chars(doc_type: str) -> tuple[int, int]:
    """Characters of an answer of a type with line items (ROW_VALUE_CHARS): its header
    (the empty answer's keys, quotes, braces and nulls, and HEAD_VALUE_CHARS of values),
    and each item (an empty line item, its comma, and ROW_VALUE_CHARS)."""
    header = len(model_for(doc_type)().model_dump_json()) + HEAD_VALUE_CHARS[doc_type]
    item = len(LineItem().model_dump_json()) + 1 + ROW_VALUE_CHARS[doc_type]
    return header, item


def answer_tokens(doc_type: str, rows: int | None, chunks: int) -> int:
    """Tokens of the answers to a document's `chunks` requests: each chunk restates the
    header, each item row (`item_rows`) is restated once. Where the rows are not known
    (an older payload, a type without line items), the type's flat budget per chunk
    (ANSWER_TOKENS), as estimates were before the rows were counted."""
    if rows is None or doc_type not in ROW_VALUE_CHARS:
        return chunks * ANSWER_TOKENS.get(doc_type, ANSWER_TOKENS["generic"])
    header, item = answer_chars(doc_type)
    return math.ceil((chunks * header + rows * item) / CHARS_PER_TOKEN)


def estimate_tokens(payload: Any, *, doc_type: str, chunk_tokens: int) -> int:
    """Tokens a document task will spend, for admission: from its text length when the
    payload has it (`chars`), else from its page count (`pages`, set at upload).

    With its item rows counted too (`item_rows`, carried beside `chars`), what is sent and
    what comes back: the text and each request's framing, and an answer that grows with
    the rows (`answer_tokens`). The schema is not counted then: on the first rung of
    `conveyor.llm.formats` (json_schema, strict) a server enforces it and puts none of it
    in the prompt, on the others it is sent; which rung a server takes is learnt by the
    client of the process that asks it, not known where a task is enqueued. The per-agent
    correction (`conveyor.llm.estimates`) carries it as part of its intercept, as it
    carries what a tokenizer makes of four characters. A payload without `item_rows`
    estimates as before they were counted: schema and flat answer budget included."""
    data = payload if isinstance(payload, dict) else {}
    chars = data.get("chars")
    pages = data.get("pages")
    rows = data.get("item_rows")
    pages = pages if isinstance(pages, int) and pages > 0 else 1
    if isinstance(chars, int) and chars >= 0:
        text = math.ceil(chars / CHARS_PER_TOKEN)
    else:
        text = pages * TOKENS_PER_PAGE
    kind = doc_type if doc_type in ANSWER_TOKENS else "generic"
    overhead = overhead_tokens(kind)
    room = max(1, chunk_tokens - overhead)
    chunks = max(1, math.ceil(text / room))
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
        return text + chunks * overhead + answer_tokens(kind, None, chunks)
    return text + chunks * framing_tokens() + answer_tokens(kind, rows, chunks)
