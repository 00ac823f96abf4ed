"""The parties of a contract, from its preamble or its party blocks.

A preamble names each party once, then gives it a defined term: `Acme Ltd, a company
registered in England ("Supplier"), and Globex Inc. ("Buyer")`, `Zeta Corporation,
(hereinafter referred to as "ZC")`, `... einer Gesellschaft deutschen Rechts
("Auftragnehmer")`. So the defined terms are found first, and each party's name is looked
for before its term: the text after the last "and" that follows the previous party, or
else the first piece (between commas) that is not a description ("a Delaware
corporation", "having its offices at ..."). A party's legal form stays with its name
("Alpha 1, LLC"); an address, a "d/b/a" name and a description do not.

Without such a preamble, party blocks one per line: `Party A (Shipper): Acme Express Co.,
Ltd.`, `Licensor: ...`. A preamble party given as a placeholder ("the company set forth
below ("Company")") is looked up in those blocks by its term.

Confidence from the evidence: every party named and given a term by the preamble, each
name printed again (the signature blocks, notices) or ending in its legal form, is sure;
without that evidence, or with a party with no term, or from blocks alone, less; nothing
found, 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from conveyor.agents.contract_text import ContractText
from conveyor.agents.legal_forms import is_legal_form
from conveyor.documents.types import Party

# A name is trusted only with evidence that it was cut in the right place: it is printed
# again (signature blocks, notices), or it ends in its legal form ("Acme Tools Ltd"). A
# name cut in the wrong place has its defined term too.
SURE = 0.95
NAMED = 0.85  # every party named and given a term
BLOCKS = 0.8
LOOSE = 0.7
RECURS = 0.1

_CUE = re.compile(
    r"\b(?:by\s+and\s+between|by\s+and\s+among|between|among|"
    r"(?:entered\s+into|made)\s+by(?!\s+and\b)|"
    r"zwischen|entre(?:\s+les\s+soussign\u00e9s)?)\b\s*:?\s*",
    re.IGNORECASE,
)
# A defined term: ("Supplier"), (the "Company"), (hereinafter, the "Consultant"),
# (the SUPPLIER), hereinafter referred to as "ZC", hereinafter referred to as Globex.
_TERM_IN_PARENS = re.compile(r"\((?P<body>[^()]{0,160})\)")
# Double quotes, or single ones ('Distributor') where a quote opens the term.
_QUOTED = re.compile(
    r'"(?:the\s+)?(?P<term>[^"]{1,40}?)"|(?<![\w])\'(?:the\s+)?(?P<single>[^\']{1,40}?)\'(?![\w])',
    re.IGNORECASE,
)
_BARE_TERM = re.compile(r"^(?:the\s+)?(?P<term>[A-Z][\w&-]*(?:\s+[A-Z][\w&-]*){0,2})$")
_HEREINAFTER = re.compile(
    r"\b(?:hereinafter|hereafter|ci-apr\u00e8s|nachfolgend|im\s+Folgenden)\b[,\s]*"
    r"(?:(?:referred\s+to\s+as|called|designated|d\u00e9nomm\u00e9e?|genannt)\s+)?"
    r"(?:the\s+|le\s+|la\s+)?(?:\"(?P<quoted>[^\"]{1,40})\"|(?P<bare>[A-Z][\w-]+))",
    re.IGNORECASE,
)
_ARTICLE = re.compile(r"^(?:the|le|la|les|l'|der|die|das)\s*(?<=\s|')", re.IGNORECASE)
# A parenthesis naming the parties together, not one of them.
_GROUP = re.compile(
    r"\b(?:together|collectively|each|individually|jointly|gemeinsam|ensemble)\b", re.I
)
_GROUP_TERMS = {"party", "parties", "partei", "parteien", "partie", "vertragspartei"}
# What is not a name: a description, an address, another name.
_DESCRIPTION = re.compile(
    r"^(?:a|an|the\s+(?:company|corporation|party)|with|having|whose|which|located|"
    r"incorporated|organi[sz]ed|existing|registered|residing|domiciled|doing|acting|d/b/a|"
    r"dba|f/k/a|formerly|at|of|its|einer?|eine[mn]?|mit|une?|soci\u00e9t\u00e9|dont|"
    r"sise?|domicili\u00e9e?|represented|vertreten|repr\u00e9sent\u00e9e?)\b",
    re.IGNORECASE,
)
_ADDRESS = re.compile(
    r"\b(?:with|having|whose|located|address|offices?|residing|domiciled|mit\s+Sitz|"
    r"Hauptsitz|si\u00e8ge)\b|\d{2,}",
    re.IGNORECASE,
)
_ENTITY_NOUN = re.compile(
    r"(?:company|corporation|partnership|trust|association|bank|LLC|GmbH|Ltd\.?|Inc\.?)$",
    re.IGNORECASE,
)
# Where one party's text ends and the next one's begins: "and" after a comma, a
# parenthesis or a dash, or after a description's last word ("a Delaware limited
# liability company and Globex ..."); not inside one ("organized and existing",
# "England and Wales").
_AND = re.compile(
    r"(?P<before>[,;)\u2014\u2013-]?)\s*\b(?:and|und|et|y|e)\s*:?\s+(?:\(\d\)\s*)?", re.I
)
_NAME_CUT = re.compile(
    r"\s+(?:a|an|einer?|une?)\s+|\s+(?:with|having|located|whose|mit\s+Sitz)\b|\s*\(|\s+\u2014|"
    r"\s+(?=(?:Suite|Room|Unit|Floor|Building|P\.?\s?O\.?\s+Box)\b)|\s+(?=\d{1,5}(?:-\d+)?\s+[A-Z][a-z])"
)
# "the company set forth below", "the Agent named on the signature page hereof": a party
# the preamble does not name.
_PLACEHOLDER = re.compile(
    r"^(?:[Tt]he|[Aa]n?|[Ss]uch|[Ee]ach|[Dd]er|[Dd]ie|[Ll][ae])\s+[a-z]|"
    r"(?i:\b(?:named|identified|listed|set\s+forth|described)\s+(?:on|in|below|above)\b|"
    r"\bsignature\s+page\b)"
)
_NUMBERING = re.compile(r"^\(?\d\)\s*|^\(?[a-z]\)\s+")
_LABEL = re.compile(
    r"^(?P<label>Party\s+[A-Z1-9]|Licensor|Licensee|Seller|Buyer|Supplier|Customer|Client|"
    r"Company|Contractor|Consultant|Vendor|Purchaser|Lessor|Lessee|Landlord|Tenant|Employer|"
    r"Employee|Distributor|Reseller|Provider|Auftraggeber|Auftragnehmer|Verk\u00e4ufer|"
    r"K\u00e4ufer|Prestataire)\s*(?:\((?P<role>[^)]{1,30})\))?\s*:\s*(?P<name>\S.{1,100})$",
    re.IGNORECASE,
)
_LABEL_NAME_END = re.compile(
    r"\s+(?:Address|Add|Tel|Telephone|Phone|Fax|E-?mail|Registered|Legal\s+Representative)\b"
    r"|\s*\(|\s{2,}"
)
_MAX_NAME_WORDS = 12
_SIGNATURE_START = re.compile(r"IN\s+WITNESS\s+WHEREOF|\bSIGNED\b|/s/|\bBy:\s")
_SIGNED_NAME = re.compile(
    r"\b((?:[A-Z][A-Z0-9&'-]*\.?\s+){1,5}?(?:COMPANY|CORPORATION|CORP\.|INC\.|LLC|"
    r"L\.L\.C\.|LTD\.|LIMITED|GMBH|AG|PLC|L\.P\.|CO\.))(?![A-Za-z])"
)


@dataclass
class _Party:
    name: str | None
    terms: list[str] = field(default_factory=list)
    quoted: bool = True  # its terms are quoted ones, not bare "(NBFC)" abbreviations
    guessed: bool = False  # its name read off the signature blocks


def read_parties(text: ContractText) -> tuple[list[Party], float]:
    """The parties and the confidence in them."""
    found, confidence = _from_preamble(text)
    if len(found) < 2:
        found, confidence = _from_blocks(text.lines[:60]), BLOCKS
    if len(found) < 2:
        return [], 0.0
    every = text.flat.casefold()
    if all(
        p.name and (every.count(_core(p.name)) >= 2 or _ends_in_legal_form(p.name)) for p in found
    ):
        confidence = min(SURE, confidence + RECURS)
    return [Party(name=p.name, role=_role(p)) for p in found], confidence


def _from_preamble(text: ContractText) -> tuple[list[_Party], float]:
    for cue in list(_CUE.finditer(text.preamble))[:3]:
        parties = _split(text.preamble[cue.end() :])
        for party in parties:
            if party.name is None or _PLACEHOLDER.search(party.name):
                known = [p.name for p in parties if p.name and not _PLACEHOLDER.search(p.name)]
                party.name = _labelled(text.lines[:80], party.terms)
                if party.name is None:
                    party.name = _signed(text, known)
                    party.guessed = party.name is not None
        named = _once_each([p for p in parties if p.name])
        if len(named) >= 2:
            sure = all(p.terms for p in named) and len(named) == len(parties)
            sure = sure and not any(p.guessed for p in named)
            return named, NAMED if sure else LOOSE
    return [], 0.0


def _once_each(parties: list[_Party]) -> list[_Party]:
    """A party named twice (a preamble that runs on, a text repeated) is one party."""
    seen: dict[str, _Party] = {}
    for party in parties:
        key = (party.name or "").casefold()
        if key in seen:
            seen[key].terms += [t for t in party.terms if t not in seen[key].terms]
        else:
            seen[key] = party
    return list(seen.values())


def _terms(segment: str) -> list[tuple[int, int, list[str], bool]]:
    """Every defined term of `segment`: (start, end, terms, whether quoted) in order. An
    unquoted one, "(the SUPPLIER)", may also be an abbreviation: "a registered Non-banking
    Financial Company (NBFC)"."""
    found: list[tuple[int, int, list[str], bool]] = []
    for match in _TERM_IN_PARENS.finditer(segment):
        body = match.group("body")
        group = _GROUP.search(body)
        own = body[: group.start()] if group else body
        terms = [(m.group("term") or m.group("single")).strip() for m in _QUOTED.finditer(own)]
        quoted = bool(terms)
        if not terms and group:
            # "(together with its successors and assigns, "Lessor")": the term is after
            # the group word, and is the party's own unless it names the group
            after = body[group.end() :]
            terms = [
                (m.group("term") or m.group("single")).strip() for m in _QUOTED.finditer(after)
            ]
            terms = terms[:1] if terms and not terms[0].lower().endswith("s") else []
            quoted = bool(terms)
        if not terms:
            bare = _BARE_TERM.match(own.strip())
            if bare and not is_legal_form(bare.group("term")):
                terms = [bare.group("term")]
        hereinafter = _HEREINAFTER.search(own)
        if not quoted and hereinafter:
            terms, quoted = [hereinafter.group("quoted") or hereinafter.group("bare")], True
        terms = [_ARTICLE.sub("", t.strip()) for t in terms]
        terms = [t for t in terms if t and t.lower() not in _GROUP_TERMS]
        if terms:
            found.append((match.start(), match.end(), terms, quoted))
    for match in _HEREINAFTER.finditer(segment):
        if any(s <= match.start() < e for s, e, _, _ in found):
            continue
        term = _ARTICLE.sub("", (match.group("quoted") or match.group("bare")).strip())
        if term and term.lower() not in _GROUP_TERMS:
            found.append((match.start(), match.end(), [term], True))
    return sorted(found)


def _split(segment: str) -> list[_Party]:
    """The parties of a preamble segment, each with its defined terms."""
    terms = _terms(segment)
    if len(terms) < 2:
        return _split_plain(segment)
    parties: list[_Party] = []
    previous_end = 0
    for start, end, names, quoted in terms:
        region = segment[previous_end:start]
        name = _name_in(region, first=not parties)
        if name is None and parties and not _conjunctions(region):
            party = parties[-1]
            if quoted and not party.quoted:  # a quoted term outranks an abbreviation
                party.terms, party.quoted = list(names), True
            elif quoted == party.quoted:
                party.terms += [n for n in names if n not in party.terms]
        else:
            parties.append(_Party(name, list(names), quoted))
        previous_end = end
    return parties


def _split_plain(segment: str) -> list[_Party]:
    """`between X and Y.` with no defined terms."""
    sentence = re.split(r"(?<![A-Z][a-z])(?<!\b[A-Z])\.\s+(?=[A-Z][a-z]+\s+[a-z])", segment)[0]
    pieces = re.split(r"\s+(?:and|und|et)\s+", sentence, maxsplit=1)
    names = [_clean_name(_NAME_CUT.split(p, maxsplit=1)[0]) for p in pieces]
    if len(names) == 2 and all(n and _looks_like_name(n) for n in names):
        return [_Party(n) for n in names]
    return []


def _name_in(region: str, *, first: bool) -> str | None:
    """The name of the party whose defined term follows `region`, if it names one."""
    conjunctions = _conjunctions(region)
    if conjunctions:
        return _first_name(region[conjunctions[-1] :], trust=True)
    if first:
        return _first_name(region, trust=True)
    return _first_name(region, trust=False)


def _conjunctions(region: str) -> list[int]:
    """Where, in `region`, the text after an "and" that starts a party begins."""
    found = []
    for match in _AND.finditer(region):
        word = region[: match.start()].split()[-1:] or [""]
        if match.group("before") or _ENTITY_NOUN.search(word[0]) or match.start() == 0:
            found.append(match.end())
    return found


def _first_name(region: str, *, trust: bool) -> str | None:
    pieces = [p.strip() for p in re.split(r",\s*", region.strip(" ,;:\u2014\u2013-"))]
    name: list[str] = []
    for piece in pieces:
        if not piece:
            continue
        if name and is_legal_form(_NAME_CUT.split(piece, maxsplit=1)[0].strip()):
            name.append(_NAME_CUT.split(piece, maxsplit=1)[0].strip())
            continue
        if name:
            break
        if _DESCRIPTION.match(piece):
            if _ADDRESS.search(piece):
                return None  # an address runs on to the next "and": no name in it
            continue
        head = _NAME_CUT.split(_NUMBERING.sub("", piece), maxsplit=1)[0].strip()
        if not head or not (trust or _looks_like_name(head)):
            return None
        name.append(head)
    joined = _clean_name(", ".join(name))
    return joined or None


def _clean_name(name: str) -> str:
    name = _NUMBERING.sub("", name.strip(" ,;:\u2014\u2013-\"'"))
    words = name.split()
    return " ".join(words[:_MAX_NAME_WORDS])


def _looks_like_name(name: str) -> bool:
    return bool(re.match(r"[A-Z0-9]", name)) and not _DESCRIPTION.match(name)


def _labelled(lines: list[str], terms: list[str]) -> str | None:
    """The name a party block gives one of `terms` ("Company: Globex Solutions, Inc.")."""
    wanted = {t.casefold() for t in terms}
    for line in lines:
        match = _LABEL.match(line)
        if match and match.group("label").casefold() in wanted:
            name = _LABEL_NAME_END.split(match.group("name"), maxsplit=1)[0].strip(" ,")
            if name and not _PLACEHOLDER.search(name):
                return name
    return None


def _signed(text: ContractText, known: list[str]) -> str | None:
    """The one name in the signature blocks that is not a party's already known ("the
    Agent named on the signature page hereof"): a name in capitals ending in a legal
    form, as signature blocks print them."""
    start = _SIGNATURE_START.search(text.flat, len(text.flat) // 2)
    if start is None:
        return None
    half = len(text.flat) // 2  # signature blocks print the names just before "By:"
    region = text.flat[max(half, start.start() - 300) : start.start() + 1500]
    for name in known:
        region = re.sub(re.escape(name), " ", region, flags=re.IGNORECASE)
    found = {n.strip(" ,").casefold(): n.strip(" ,") for n in _SIGNED_NAME.findall(region)}
    return next(iter(found.values())) if len(found) == 1 else None


def _from_blocks(lines: list[str]) -> list[_Party]:
    parties: list[_Party] = []
    for line in lines:
        match = _LABEL.match(line)
        if not match:
            continue
        name = _LABEL_NAME_END.split(match.group("name"), maxsplit=1)[0].strip(" ,")
        if name and _looks_like_name(name) and not any(p.name == name for p in parties):
            role = match.group("role") or match.group("label")
            parties.append(_Party(name, [role.strip()]))
    return parties if len(parties) >= 2 else []


def _role(party: _Party) -> str | None:
    """The party's role: of its defined terms, one that names a role ("Company") rather
    than a short form of its own name ("REIT" for Acme Diversified REIT, Inc.)."""
    if not party.terms:
        return None
    own = [t for t in party.terms if not _from_name(t, party.name or "")]
    return (own or party.terms)[0]


def _from_name(term: str, name: str) -> bool:
    words = re.findall(r"[^\W_]+", name.casefold())
    initials = "".join(w[0] for w in words)
    for word in re.findall(r"[^\W_]+", term.casefold()):
        if word not in words and not (len(word) >= 2 and word in initials):
            return False
    return True


def _ends_in_legal_form(name: str) -> bool:
    words = [w for w in re.split(r"[\s,]+", name) if w]
    return len(words) > 1 and is_legal_form(words[-1])


def _core(name: str) -> str:
    """The name without its legal form, to find it again elsewhere."""
    words = [w for w in re.split(r"[\s,]+", name) if w]
    while len(words) > 1 and is_legal_form(words[-1]):
        words.pop()
    return " ".join(words).casefold()
