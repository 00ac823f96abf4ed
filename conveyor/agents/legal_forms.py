"""Legal forms of companies (GmbH, Ltd, SARL, B.V., S.p.A., Inc ...): the one vocabulary
the invoice and contract readers share, as evidence that a name is a business's.

Two forms of the same words:
- `LEGAL_FORM` finds one anywhere in a line ("Müller Bau GmbH & Co. KG, Hauptstr. 1");
- `is_legal_form` says whether one word (or a short run of words) is one, whole: the
  contract reader asks it of a name's last word ("Acme Holdings, Inc.").
"""

# Greek and Cyrillic letters are the forms' own, not look-alikes of Latin ones; Japanese
# brackets are full-width.
# ruff: noqa: RUF001, RUF003

from __future__ import annotations

import re

# One alternative per form, as regular expressions, case aside. Dots are optional where
# printed names drop them ("BV", "B.V.", "LLC").
_FORMS = (
    # German-speaking countries
    r"gmbh(?:\s*&\s*co\.?(?:\s*kg)?)?",
    r"mbh",
    r"ag",
    r"a\.g\.",
    r"kg",
    r"ohg",
    r"e\.\s?k\.",
    r"e\.v\.",
    r"ug",
    r"se",
    r"gbr",
    r"kgaa",
    r"partg(?:\s*mbb)?",
    # English-speaking countries
    r"ltd\.?(?:\s+hk)?",
    r"limited",
    r"l\.?l\.?c\.?",
    r"l\.?l\.?p\.?",
    r"pllc",
    r"l\.?p\.?",
    r"inc\.?",
    r"incorporated",
    r"corp\.?",
    r"corporation",
    r"p\.?l\.?c\.?",
    r"co\.?",
    r"company",
    r"pty\.?(?:\s+ltd\.?)?",
    # French-speaking countries
    r"sarl",
    r"s\.a\.r\.l\.",
    r"sas",
    r"s\.a\.s\.",
    r"sa",
    r"s\.a\.",
    r"eurl",
    r"sasu",
    r"sci",
    # Dutch-speaking countries
    r"b\.?v\.?",
    r"bvba",
    r"n\.?v\.?",
    r"v\.o\.f\.",
    r"cv",
    # Spanish, Italian
    r"s\.?l\.?",
    r"s\.?l\.?u\.?",
    r"s\.?p\.?a\.?",
    r"s\.?r\.?l\.?",
    r"s\.?n\.?c\.?",
    # Portuguese and Latin American
    r"ltda\.?",
    r"lda\.?",
    r"eireli",
    r"s\.a\.c\.",
    r"e\.i\.r\.l\.",
    # Central and Eastern Europe
    r"s\.?r\.?o\.?",
    r"a\.s\.",
    r"d\.o\.o\.",
    # Nordic countries, Hungary, Poland
    r"oy",
    r"oyj",
    r"asa",
    r"ab",
    r"as",
    r"a/s",
    r"aps",
    r"kft",
    r"sp\.\s*z\s*o\.\s*o\.",
    # Romania: "S.C." before a name, "P.F.A.", "I.I."
    r"s\.c\.",
    r"p\.?f\.?a\.?",
    r"i\.i\.",
    # Czech Republic and Slovakia: "spol. s r.o.", "v.o.s.", "k.s."; Slovenia and Croatia:
    # "d.d.", "j.d.o.o.", "d.n.o.", "k.d.", "s.p."
    r"spol\.\s*s\s*r\.\s*o\.",
    r"v\.\s?o\.\s?s\.",
    r"k\.\s?s\.",
    r"d\.\s?d\.",
    r"j\.\s?d\.\s?o\.\s?o\.",
    r"d\.\s?n\.\s?o\.",
    r"k\.\s?d\.",
    r"s\.\s?p\.",
    # Hungary: "Zrt.", "Nyrt.", "Bt.", "Kkt."
    r"zrt\.?",
    r"nyrt\.?",
    r"bt\.",
    r"kkt\.?",
    # The Baltic states: "UAB", "SIA", "OÜ", "MTÜ"; Finland "Tmi"
    r"uab",
    r"sia",
    r"oü",
    r"mtü",
    r"tmi",
    # Turkey: "A.Ş.", "Ltd. Şti."
    r"a\.\s?ş\.",
    r"(?:ltd\.?\s*)?şti\.?",
    # Greece: "Α.Ε.", "Ε.Π.Ε.", "Ο.Ε.", "Ε.Ε.", "Ι.Κ.Ε."
    r"α\.?\s?ε\.?",
    r"ε\.?\s?π\.?\s?ε\.?",
    r"ο\.\s?ε\.",
    r"ε\.\s?ε\.",
    r"μ?\.?ι\.?\s?κ\.?\s?ε\.?",
    # Bulgaria (and the Cyrillic forms of its neighbours): "ЕООД", "ООД", "ЕАД", "АД", "ЕТ"
    r"е?оод",
    r"е?ад",
    r"ет",
    r"ооо",
)
# Japan's forms, set before or after the name and with no space beside it ("株式会社山田商事",
# "山田商事株式会社"), and their abbreviations: "(株)", "㈱", "(有)", "㈲", "(同)".
_JAPANESE = (
    r"株式会社|有限会社|合同会社|合名会社|合資会社|一般社団法人|一般財団法人|"
    r"[(（]\s*[株有同]\s*[)）]|[㈱㈲]"
)
_ANY = "|".join(_FORMS)

LEGAL_FORM = re.compile(r"(?<![\w.])(?:" + _ANY + r")(?!\w)|(?:" + _JAPANESE + ")", re.IGNORECASE)
_WHOLE = re.compile(r"(?:" + _ANY + "|" + _JAPANESE + r")", re.IGNORECASE)
_JAPANESE_FORM = re.compile(_JAPANESE)

# Forms that are also ordinary words of running text ("as", "company", German "ab",
# French "se"): in a contract's prose they are words, and a bare defined term such as
# (the Company) is still a term.
_ALSO_WORDS = frozenset({"as", "company", "se", "ab", "cv"})


_A_WORD = re.compile(r"[^\W\d_]{2,}")


def name_forms(text: str) -> list[re.Match[str]]:
    """The legal forms in `text` that end a name: each after a word of letters. "1012 AB
    Amsterdam" holds the Swedish "AB", but after a postcode, not after a name."""
    return [
        form
        for form in LEGAL_FORM.finditer(text)
        if _A_WORD.search(text[: form.start()])
        # A Japanese form may stand first too: "株式会社山田商事".
        or (_JAPANESE_FORM.fullmatch(form.group(0)) and _A_WORD.match(text, form.end()))
    ]


def is_legal_form(words: str) -> bool:
    """Whether `words`, whole, is a legal form and not also an ordinary word: the test
    for a name's last word in running text ("Acme Holdings, Inc.", "Globex S.p.A.")."""
    return bool(_WHOLE.fullmatch(words)) and words.casefold() not in _ALSO_WORDS
