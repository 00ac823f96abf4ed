"""Amounts, dates and currencies as documents print them, read back into values. Used by
the offline extractor's rules.

Amounts: the document's number style is voted over all its amounts ("1.234,56" and
"12,50" vote for a decimal comma), then every amount is read with it; when the thousands
separator is in doubt, the candidates come in order and the rules keep the reading whose
sums agree. Dates: a numeric date with slashes may read both ways (03/04/2026); it keeps
both readings here, and date_order.py decides between them.
"""

from __future__ import annotations

import datetime
import functools
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

# The kana and ideographs of Japanese (and Chinese) text, and the half-width katakana:
# letters to Python's regex, but a script that sets a number without a space beside its
# words ("合計110,000円", "税込1,100"). Next to these, a number still stands alone.
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
# A letter or digit of a word, not of those scripts.
_LETTER = rf"[^\W{CJK}]"

# An amount as printed: groups of three with , . ' or a space, and 0-2 decimals.
AMOUNT = re.compile(
    rf"(?<![.,'])(?<!{_LETTER})-?"
    r"(?:\d{1,3}(?:(?P<sep>[,.' ])\d{3})(?:(?P=sep)\d{3})*|\d+)"
    rf"(?:[.,]\d{{1,2}})?(?!'|{_LETTER})"
)
_DECIMAL_TAIL = re.compile(r"[.,](\d{1,2})$")
# Typographic grouping characters, as locales print them (CLDR): the right single quote of
# Swiss German ("1\u2019234.50"), no-break and narrow no-break spaces of French ("1 234,56"),
# thin spaces. Read as the ASCII separators they stand for; one character for one, so
# positions in the text stay.
_GROUPING = str.maketrans(
    {"\u2019": "'", "\u02bc": "'", "\u00a0": " ", "\u202f": " ", "\u2009": " "}
)


@dataclass(frozen=True)
class NumberStyle:
    decimal: str  # "." or ","
    thousands: str  # ",", ".", "'", " " or ""

    def parse(self, token: str) -> Decimal | None:
        text = token.strip()
        negative = text.startswith("-")
        text = text.lstrip("-")
        if self.thousands:
            text = text.replace(self.thousands, "")
        if self.decimal == ",":
            text = text.replace(",", ".")
        elif "," in text:
            return None  # a comma where this style has none: not an amount of this document
        if text.count(".") > 1:
            return None
        try:
            value = Decimal(text)
        except InvalidOperation:
            return None
        return -value if negative else value


_DASH_CENTS = re.compile(r"\d,[-\u2013](?![\d-])")


def number_styles(text: str) -> list[NumberStyle]:
    """The document's likely number styles, best first. The decimal separator is voted by
    which separator ends amounts with 1-2 digits; the thousands separator is the one seen
    most in groups of three, and the runner-up is offered as the alternative (a row
    "3 703,68" is either 3 and 703.68 or 3,703.68: only the arithmetic can tell)."""
    text = text.translate(_GROUPING)
    for _, pattern in DATE_PATTERNS:  # 10.07.2026 is a date, not an amount
        text = pattern.sub(" ", text)
    votes: Counter[str] = Counter()
    thousands: Counter[str] = Counter()
    for match in AMOUNT.finditer(text):
        token = match.group(0)
        tail = _DECIMAL_TAIL.search(token)
        if tail:
            votes[token[tail.start()]] += 1
        if match.group("sep"):
            thousands[match.group("sep")] += 1
    # "12.100,-": whole amounts whose cents are a dash still show their decimal comma.
    votes[","] += len(_DASH_CENTS.findall(text))
    decimal = "," if votes[","] > votes["."] else "."
    if not sum(votes.values()) and thousands["."] > thousands[","]:
        decimal = ","  # only "1.000" and "12.500": dots that group thousands
    # A space groups thousands beside a decimal point too ("CHF 1 199.95", SI style); it
    # is offered only when seen, and the two separators seen most are kept.
    candidates = ("'", ",", " ") if decimal == "." else (".", " ")
    ranked = sorted(candidates, key=lambda sep: -thousands[sep])[:2]
    # The usual separator first when nothing was seen.
    if not any(thousands[sep] for sep in candidates):
        ranked = [",", "'"] if decimal == "." else [".", " "]
    return [NumberStyle(decimal, sep) for sep in ranked]


def amounts_in(line: str, style: NumberStyle) -> list[tuple[Decimal, int, int]]:
    """Every amount of `line` read in `style`, with where it is: (value, start, end)."""
    found = []
    for match in _amount_pattern(style).finditer(line.translate(_GROUPING)):
        value = style.parse(match.group(0))
        if value is not None:
            found.append((value, match.start(), match.end()))
    return found


_PATTERNS: dict[NumberStyle, re.Pattern[str]] = {}


def _amount_pattern(style: NumberStyle) -> re.Pattern[str]:
    pattern = _PATTERNS.get(style)
    if pattern is None:
        t, d = re.escape(style.thousands), re.escape(style.decimal)
        pattern = re.compile(
            rf"(?<![.,'/-])(?<!{_LETTER})-?(?:\d{{1,3}}(?:{t}\d{{3}})+|\d+)(?:{d}\d{{1,2}})?"
            rf"(?![/]|{_LETTER}|[.,]\d)"
        )
        _PATTERNS[style] = pattern
    return pattern


# ---------------------------------------------------------------------------- currencies

# Every currency sign Unicode has (category Sc: "$", "€", "₺", "₽", "₩", "฿", ...): around an
# amount, noise to its number as the signs of the common currencies are. Not the cent's
# sign: "50¢" is half a dollar.
CURRENCY_SIGNS = "".join(
    c for c in map(chr, range(0x24, 0x10000)) if unicodedata.category(c) == "Sc" and c not in "¢￠"
)
_ONE_CURRENCY_SIGNS = {
    "₺": "TRY",
    "₽": "RUB",
    "₴": "UAH",
    "₩": "KRW",
    "₪": "ILS",
    "₫": "VND",
    "₦": "NGN",
    "₱": "PHP",
    "₸": "KZT",
    "₾": "GEL",
    "₼": "AZN",
    "฿": "THB",
}

CODES = (
    "USD EUR GBP CAD AUD CHF JPY NZD SEK NOK DKK PLN CZK HUF CNY INR SGD HKD MXN BRL ZAR"
).split()
SIGNS = {
    # Chinese: the New Taiwan and Hong Kong dollars, the yuan by its names.
    "NT$": "TWD",
    "新台幣": "TWD",
    "新台币": "TWD",
    "HK$": "HKD",
    "港币": "HKD",
    "港幣": "HKD",
    "RMB": "CNY",
    "人民币": "CNY",
    "人民幣": "CNY",
    "CA$": "CAD",
    "A$": "AUD",
    "NZ$": "NZD",
    "MX$": "MXN",
    "R$": "BRL",
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    # The yen's kanji, after the amount: "1,234円".
    "円": "JPY",
    "$": "USD",
    # Signs of one currency each that price-parser's data does not give (some are newer
    # than it: the lira's since 2012, the rouble's since 2013).
    **{sign: code for sign, code in _ONE_CURRENCY_SIGNS.items() if sign not in "€£¥₹$"},
}
_CODE = re.compile(r"(?<![A-Z])(" + "|".join(CODES) + r")(?![A-Z])")
# The euro sign as the text layers of some TeX fonts give it: a lone "e" after an amount
# with cents ("2 900,00 e", "0,30 e/km"), where the glyph has no Unicode mapping, or
# before one, where the sign is set first ("e 1 710,00", "= e 342,00").
_TEX_EURO = re.compile(
    r"(?<=[.,]\d\d)\s?e(?![^\W\d_])|(?<![^\s=(])e\s?(?=\d[\d .,']*[.,]\d\d(?!\d))"
)


def tex_euro(text: str) -> bool:
    """Whether `text` prints an amount with cents and the lone "e" of a TeX font's euro."""
    return bool(_TEX_EURO.search(text))


def currencies_in(text: str) -> Counter[str]:
    """Currency codes and signs in `text`, as codes, with how often each appears."""
    found: Counter[str] = Counter(_CODE.findall(text))
    euros = len(_TEX_EURO.findall(text))
    if euros >= 2:  # once could be a word; an amount after amount is the sign
        found["EUR"] += euros
    rest = text
    for sign, code in SIGNS.items():  # longest signs first: "CA$" is not "$"
        n = rest.count(sign)
        if n:
            found[code] += n
            rest = rest.replace(sign, " ")
    return found


# --------------------------------------------------------------------------------- dates

# Month names in the languages invoices come in, read by dateparser (its locale data
# knows "juillet", "März", "mei", "settembre", "Sept.", "março", "października", "mai",
# "maj", "martie", "března", "március", "ožujka", "Μαρτίου", "kovo" ...), once per distinct
# word: English, German, French, Dutch, Spanish, Italian, Portuguese, Polish, Norwegian,
# Danish, Swedish, Romanian, Czech, Slovak, Hungarian, Croatian, Slovene, Bulgarian,
# Finnish, Turkish, Catalan, Greek, Estonian, Lithuanian, Latvian, Russian, Ukrainian.
LANGUAGES = [
    "en", "de", "fr", "nl", "es", "it", "pt", "pl", "nb", "da", "sv",
    "ro", "cs", "sk", "hu", "hr", "sl", "bg", "fi", "tr", "ca", "el", "et", "lt", "lv",
    "ru", "uk",
]  # fmt: skip
_MONTH = r"(?P<mon>[^\W\d_]{3,12})\.?"
# A numeric date's edges: no letter or digit beside it, but Japanese may set its words
# against it ("発行日2024/04/01").
_B = rf"(?<!{_LETTER})"
_E = rf"(?!{_LETTER})"
DATE_PATTERNS = (
    # ISO 8601, alone or with its time ("2017-07-05T09:09:23").
    ("iso", re.compile(_B + r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?:" + _E + r"|(?=T\d))")),
    ("iso", re.compile(_B + r"(?P<y>\d{4})/(?P<m>\d{1,2})/(?P<d>\d{1,2})" + _E)),
    # Year first with dots, as Hungarian, Korean and Lithuanian print it ("2024.03.04.",
    # "2024. 03. 04.").
    ("iso", re.compile(_B + r"(?P<y>\d{4})\.\s?(?P<m>\d{1,2})\.\s?(?P<d>\d{1,2})" + _E + r"\.?")),
    # "19.5.2024", and with a space after each dot as Czech and Slovak print it ("19. 5. 2024").
    ("dot", re.compile(_B + r"(?P<d>\d{1,2})\.\s?(?P<m>\d{1,2})\.\s?(?P<y>\d{4})" + _E)),
    # "04.03.24": German day, month and a two-digit year (read in this century), also at a
    # sentence's end ("Zahlbar bis zum 21.02.25.").
    ("dot", re.compile(r"(?<![\d.,])(?P<d>\d{1,2})\.(?P<m>\d{1,2})\.(?P<y>\d{2})(?![\d,]|[.,]\d)")),
    # "19/5/2024", and with spaces around the slashes: "19 / 5 / 2024".
    ("slash", re.compile(_B + r"(?P<a>\d{1,2})\s?/\s?(?P<b>\d{1,2})\s?/\s?(?P<y>\d{4})" + _E)),
    ("slash", re.compile(_B + r"(?P<a>\d{1,2})-(?P<b>\d{1,2})-(?P<y>\d{4})" + _E)),
    # "22/10/21": a two-digit year, read in this century (tried after the four-digit forms).
    ("slash", re.compile(r"(?<![\d/.,])(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>\d{2})(?![\d/.,])")),
    ("mdy", re.compile(rf"\b{_MONTH}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s+(?P<y>\d{{4}})\b")),
    # "Mar-04-2024", "Mar/04/2024".
    ("mdy", re.compile(rf"\b{_MONTH}[-/](?P<d>\d{{1,2}})[-/](?P<y>\d{{4}})\b")),
    # Day, month, year with what languages put between them: an ordinal mark ("1er",
    # "1°", "3rd"), English "of" and Spanish "de"/"del" ("1 de mayo de 2025", "3rd of
    # March 2024"), slashes ("5/Mar/2024"), a dot and no space ("15.januar 2024"), and
    # Catalan's "de" elided before a vowel ("6 d'abril de 2024").
    (
        "dmy",
        re.compile(
            rf"\b(?P<d>\d{{1,2}})(?:\.(?=[^\W\d_])|(?:\.|er|st|nd|rd|th|°|º)?(?:[\s/-]+(?:del?|of))?"
            rf"[\s/-]+)(?:d['\u2019])?{_MONTH},?(?:[\s-]+del?)?[\s/-]+(?P<y>\d{{4}})\b"
        ),
    ),
    # "04 Mar 24", "05-MAR-24": a month's name and a two-digit year.
    (
        "dmy",
        re.compile(r"\b(?P<d>\d{1,2})([\s/-])(?P<mon>[^\W\d_]{3,9})\.?\2(?P<y>\d{2})(?![\d.,:])"),
    ),
    # Year first with a month's name: Hungarian "2024. március 15." / "2024. márc. 15.",
    # Lithuanian "2024 m. kovo 15 d.".
    (
        "ymd",
        re.compile(
            rf"\b(?P<y>\d{{4}})(?:\.|\s*m\.)?\s+{_MONTH}\s+(?P<d>\d{{1,2}})(?![\d.,]\d)"
            r"(?:\.|\s*d\.)?"
        ),
    ),
    # Latvian: the year, "gada" (of the year), the day and the month: "2024. gada 12. martā".
    (
        "ydm",
        re.compile(rf"\b(?P<y>\d{{4}})\.?\s*(?:gada|g\.)\s*(?P<d>\d{{1,2}})\.\s*{_MONTH}"),
    ),
    # Japanese: the year, month and day each with its kanji, "2024年4月1日", or the year of
    # an era, "令和6年4月1日", "令和元年5月1日" (see `era_year`).
    (
        "ja",
        re.compile(
            r"(?<!\d)(?:(?P<y>\d{4})|(?P<era>令和|平成|昭和|民國|民国)\s*(?P<ey>\d{1,3}|元))\s*年\s*"
            r"(?P<m>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*日"
        ),
    ),
    # An era's year with dots or slashes: "令和6.4.1", "令和6/04/01".
    (
        "ja",
        re.compile(
            r"(?P<era>令和|平成|昭和|民國|民国)\s*(?P<ey>\d{1,3}|元)\s*(?P<sep>[./])\s*(?P<m>\d{1,2})\s*"
            r"(?P=sep)\s*(?P<d>\d{1,2})(?![\d.,/])"
        ),
    ),
)

# The first year of each Japanese era, less one: its year n is the Gregorian year
# offset + n (令和 began on 1 May 2019, 平成 on 8 January 1989, 昭和 on 25 December 1926);
# and the Republic of China's calendar, Taiwan's, whose year 1 (民國元年) is 1912.
_ERAS = {"令和": 2018, "平成": 1988, "昭和": 1925, "民國": 1911, "民国": 1911}


def era_year(era: str, year: str) -> int | None:
    """The Gregorian year of the year `year` of the Japanese era `era` ("元" is its first
    year): 令和6 is 2024, 令和元 is 2019, 平成31 is 2019, 民國113 is 2024. dateparser (1.5) reads
    "2024年4月1日" but no era's year, and the reader reads numeric dates with its own
    patterns (DATE_PATTERNS), not dateparser's: so the era calendar is here."""
    offset = _ERAS.get(era)
    if offset is None:
        return None
    number = 1 if year == "元" else int(year) if year.isdigit() else 0
    return offset + number if number >= 1 else None


@functools.lru_cache(maxsize=4096)
def month_number(word: str) -> int | None:
    """1-12 for a month's name or abbreviation in one of LANGUAGES, else None."""
    if len(word) < 3 or not word.isalpha():
        return None
    import dateparser  # type: ignore[import-untyped]  # imported on first use: it is slow to load

    parsed = dateparser.parse(
        f"15 {word} 2001",
        languages=LANGUAGES,
        settings={"STRICT_PARSING": True, "REQUIRE_PARTS": ["day", "month", "year"]},
    )
    if parsed is None and word[-1] in "āī":
        # Latvian dates name the month in the locative ("martā", "februārī"), which
        # dateparser does not know: its nominative ("marts", "februāris").
        return month_number(word[:-1] + ("s" if word[-1] == "ā" else "is"))
    return parsed.month if parsed is not None and parsed.year == 2001 else None


@dataclass(frozen=True)
class DateToken:
    """A date as printed. `both` holds the two readings of an ambiguous slash date
    (month first, day first); `date` is the reading when there is only one."""

    text: str
    date: datetime.date | None
    both: tuple[datetime.date | None, datetime.date | None] | None = None


def _make(y: int, m: int, d: int) -> datetime.date | None:
    try:
        return datetime.date(y, m, d)
    except ValueError:
        return None


def dates_in(line: str) -> list[DateToken]:
    """The dates printed in `line`, in order."""
    found: list[tuple[int, DateToken]] = []
    taken: list[range] = []
    for kind, pattern in DATE_PATTERNS:
        for match in pattern.finditer(line):
            if any(match.start() in span for span in taken):
                continue
            g = match.groupdict()
            token: DateToken | None = None
            if kind == "ja":
                year = int(g["y"]) if g.get("y") else era_year(g["era"], g["ey"])
                if year is not None:
                    token = DateToken(match.group(0), _make(year, int(g["m"]), int(g["d"])))
            elif kind in ("iso", "dot"):
                year = int(g["y"]) + (2000 if len(g["y"]) == 2 else 0)
                token = DateToken(match.group(0), _make(year, int(g["m"]), int(g["d"])))
            elif kind == "slash":
                a, b, y = int(g["a"]), int(g["b"]), int(g["y"])
                y += 2000 if y < 100 else 0
                month_first, day_first = _make(y, a, b), _make(y, b, a)
                if month_first and day_first and month_first != day_first:
                    token = DateToken(match.group(0), None, (month_first, day_first))
                else:
                    token = DateToken(match.group(0), month_first or day_first)
            else:
                month = month_number(g["mon"].lower())
                year = int(g["y"]) + (2000 if len(g["y"]) == 2 else 0)
                # A month's abbreviation is a word of other kinds too (Czech "led", Polish
                # "sie"): "2 LED 1200 lm" is a lamp, no date of the year 1200.
                if month and 1900 <= year < 2100:
                    token = DateToken(match.group(0), _make(year, month, int(g["d"])))
            if token is not None and (token.date or token.both):
                found.append((match.start(), token))
                taken.append(range(match.start(), match.end()))
    return [token for _, token in sorted(found, key=lambda pair: pair[0])]


_NUMERIC_DATE = re.compile(r"^\d{1,2}[/-]\d{1,2}[/-]\d{4}$")


def slash_order(tokens: list[DateToken]) -> str | None:
    """'mdy' or 'dmy' if some slash date of the document can only be read one way."""
    for token in tokens:
        if token.both is None and _NUMERIC_DATE.match(token.text) and token.date is not None:
            parts = re.split(r"[/-]", token.text)
            first = int(parts[0])
            if first > 12:
                return "dmy"
            second = int(parts[1])
            if second > 12:
                return "mdy"
    return None


def resolve(token: DateToken, order: str) -> datetime.date | None:
    if token.both is None:
        return token.date
    return token.both[0] if order == "mdy" else token.both[1]


# ------------------------------------------------------------------------ amounts in cells

_CELL_NOISE = re.compile(
    # Codes and signs, and a tax-category letter after the amount ("170,00 B").
    # "R$", "S$", "HK$": a dollar-like sign with its country's letters.
    # "S/" and "S/.": the Peruvian sol's sign.
    # A code glued to its amount ("USD1,234.00") only when it is a currency's.
    r"(?:\b(?:[A-Z]{3})\b|\b(?:" + "|".join(CODES) + r")(?=\d)|\b[A-Z]{1,3}\$|"
    "[" + re.escape(CURRENCY_SIGNS) + r"円]|\bRs\.?|zł|"
    # Japanese "(税込)", "(税抜)", "税込": whether the amount includes the tax.
    r"\(?\s*税[込抜]み?\s*\)?|\bCHF\b|\bkr\b|\bK[čc]\b|\bS/\.?|"
    # A currency's name, in any case ("152,00 Euro", "EURO 5,00", "12.50 dollars").
    r"\b(?:euros?|dollars?|pounds?|francs?|franken|pesos?|reais|rupees?|kron(?:or|er|en?))\b|"
    r"(?<=\d)\s+[A-Z]$|" + _TEX_EURO.pattern + ")",
    re.IGNORECASE,
)
# "(1,234.50)", "(12,50 €)", and a whole amount with its sign: "($100)", "(€ 40)".
_PARENTHESISED = re.compile(r"^\(\s*([^()%]*\d[.,]\d{2}[^()%\d]*|[€$£¥]\s?\d[\d,.' ]*)\s*\)$")
_TRAILING_MINUS = re.compile(r"^([^-]*\d[.,]\d{2}(?:\s*[^\W\d_]{1,3}|\s*[€$£¥])?)\s?-$")
# "12.100,-" and "45.-": a whole amount, its cents written as a dash.
_NO_CENTS = re.compile(r"(?<=\d)[.,][-\u2013]$")
# "¥55,000-", "55,000円-": a Japanese whole amount closed by a dash (nothing may be added
# after it), not a negative one. The yen's sign or kanji must be there.
_YEN_BRACKETED = re.compile(r"^\s*(¥\s?\d[\d,]*|\d[\d,]*\s?円)\s?\)\s*$")
_YEN_CLOSED = re.compile(r"^(¥\s?\d[\d,]*|\d[\d,]*\s?円)\s?[-\u2013\u2015\u30fc]")
_MINUS = str.maketrans({"\u2212": "-", "\u2013": "-"})  # minus sign, en dash
_CELL_NUMBER = re.compile(r"^-?\s*\d[\d.,' ]*$")
# Only before a currency's sign or an amount with its cents: "+49 30 1234567" and
# "+33612345678" are telephone numbers.
_PLUS = re.compile(r"^\s*\+\s*(?=[^\w\s+]{1,3}\s?\d|\d[\d.,' ]*[.,]\d{2}(?!\d))")


def cell_amount(text: str, style: NumberStyle) -> Decimal | None:
    """The one number a table cell or a value prints ("1.234,56 €", "EUR 31,00", "-0,00",
    "41,1765 €"), read in the document's style; None when the cell is not just a number
    (a percentage, a date, words). Unit prices keep their 3-4 decimals."""
    text = text.translate(_GROUPING)
    # An explicit plus sign, as a sum added to the total prints it ("TAX 14% +$196.95",
    # "+ 12,50 €"): the amount.
    text = _PLUS.sub("", text, count=1)
    # Accounting's negatives: "(1,234.50)", and the minus after the amount of ledgers and
    # ERP exports ("12,50-", "EUR 1.234,56-").
    accounting = _PARENTHESISED.match(text.strip()) or _TRAILING_MINUS.match(text.strip())
    if accounting:
        text = "-" + accounting.group(1)
    closed = _YEN_CLOSED.match(text.strip())
    if closed:
        text = closed.group(1) + text.strip()[closed.end() :]
    # "(内消費税 ¥1,000)" set in two cells: the yen amount with the bracket that closes it.
    text = _YEN_BRACKETED.sub(r"\1", text)
    stripped = _CELL_NOISE.sub(" ", _NO_CENTS.sub("", text.strip())).translate(_MINUS).strip()
    if not stripped or not _CELL_NUMBER.match(stripped) or "%" in text:
        return None
    compact = stripped.replace(" ", "")
    if style.thousands != " " and " " in stripped.strip("-").strip():
        return None  # two numbers side by side, not one grouped by spaces
    if dates_in(compact) or re.search(r"\d\.\d{1,2}\.$", compact):
        return None
    negative = compact.startswith("-")
    digits = compact.lstrip("-")
    if not _strict(style).match(digits):
        return None
    if style.thousands and style.thousands != " ":
        digits = digits.replace(style.thousands, "")
    digits = digits.replace(" ", "").replace(style.decimal, ".")
    try:
        value = Decimal(digits)
    except InvalidOperation:
        return None
    return -value if negative else value


# A cell or word that is a percentage, a rate and no amount ("19%", "7,5 %", "-10%").
PERCENT = re.compile(r"^-?\d+(?:[.,]\d+)?\s*%$")


def cell_amounts(text: str, style: NumberStyle) -> list[Decimal]:
    """The amounts of a cell that prints several side by side, as a sums row whose columns
    ran together ("2.845,53 23% 654,47 3.500,00": a net, its rate, the tax, the gross):
    each word an amount with its cents or a rate (left out), two amounts at least. Words
    without cents are no part of it: "1 710,00" is one amount grouped by a space."""
    words = text.split()
    if len(words) < 2:
        return []
    amounts: list[Decimal] = []
    for word in words:
        if PERCENT.match(word):
            continue
        value = cell_amount(word, style)
        if value is None or not re.search(rf"{re.escape(style.decimal)}\d{{2}}$", word):
            return []
        amounts.append(value)
    return amounts if len(amounts) >= 2 else []


@functools.lru_cache(maxsize=16)
def _strict(style: NumberStyle) -> re.Pattern[str]:
    """A number in `style` and nothing else: "1.234,56", "1234,5678", "12", and the
    Indian grouping by lakhs ("1,23,456.78")."""
    t, d = re.escape(style.thousands or "\0"), re.escape(style.decimal)
    return re.compile(
        rf"^(?:\d{{1,3}}(?:{t}\d{{3}})+|\d{{1,2}}(?:{t}\d{{2}})+{t}\d{{3}}|\d+)(?:{d}\d+)?$"
    )


# Currency signs that price-parser finds, as ISO 4217 codes.
_SIGN_CODES = {
    "€": "EUR",
    "£": "GBP",
    "$": "USD",
    "us$": "USD",
    "¥": "JPY",
    "₹": "INR",
    "rs": "INR",
    "rs.": "INR",
    "zł": "PLN",
    "fr.": "CHF",
    "kč": "CZK",
    "s/.": "PEN",
    "ft": "HUF",
    **_ONE_CURRENCY_SIGNS,
}


# The sol's sign as it is printed more often than price-parser's "S/.": "S/ 200.00".
_SOL = re.compile(r"(?<![\w/])S/(?=\s?\d)")
# Chinese signs and names of the yuan, the New Taiwan dollar and the Hong Kong dollar,
# which price-parser reads as "$" or not at all: "NT$1,000", "新台幣", "HK$", "港币",
# "RMB", "人民币", and "元" straight after an amount ("100元"; "発行元" names no currency).
_CHINESE_CURRENCIES = (
    (re.compile(r"\bNT\$|新台[币幣]"), "TWD"),
    (re.compile(r"\bHK\$|港[币幣]"), "HKD"),
    (re.compile(r"\bRMB\b|人民[币幣]|\d\s?元"), "CNY"),
)


def currency_of(text: str) -> str | None:
    """The ISO code of the currency `text` prints next to an amount (price-parser finds
    the sign or code), or None. A sign our table does not decide is looked up in
    price-parser's own currency data, and read only when exactly one currency in use
    prints it ("R$" is the real's; "$" or "kr" are several countries')."""
    from price_parser import Price

    if _SOL.search(text):
        return "PEN"
    for pattern, code in _CHINESE_CURRENCIES:
        if pattern.search(text):
            return code
    found = Price.fromstring(text).currency
    return _code(found.strip()) if found else None


@functools.lru_cache(maxsize=4096)
def currency_word(word: str) -> str | None:
    """The ISO code of the currency `word` is, whole ("euro", "EUR", "zł"), or None: a
    word that only holds a code ("VALOR") names none."""
    from price_parser import Price

    word = word.strip()
    # price-parser knows names in lower case only: "Euro" and "EURO" are "euro".
    for spelled in dict.fromkeys((word, word.lower())):
        found = Price.fromstring(f"1 {spelled}").currency
        if found and found.strip().casefold() == spelled.casefold():
            return _code(found.strip())
    return None


@functools.lru_cache(maxsize=16)
def sign_currencies(sign: str) -> frozenset[str]:
    """Every current currency whose usual or national sign is `sign` (price-parser's data):
    "$" is the US, Canadian, Mexican, Argentine... dollar or peso, "kr" three kroner."""
    from price_parser._currencies import CURRENCIES, REPLACED_BY_EURO

    return frozenset(
        code
        for code, info in CURRENCIES.items()
        if code not in REPLACED_BY_EURO
        and sign in (str(info.get("s") or "").strip(), str(info.get("sn") or "").strip())
    )


# Signs that more than one currency prints, read as the one our tables give them: "¥" is
# the yen's and the yuan's, "Rs" the rupee of India, Pakistan, Sri Lanka and Nepal, "C$"
# the córdoba's and, on many invoices, the Canadian dollar's. Such a currency is sure only
# when the page also prints its code, a sign of its own or its country's name (as a bare
# "$" is the United States' dollar when the page names them: invoice_currency.currency).
_SHARED_SIGNS = {
    # Japanese's kana (hiragana, katakana) are no Chinese text's: "¥" among them is the yen.
    "JPY": re.compile(
        r"\bJPY\b|\u5186|\u65e5\u672c|\b(?:yen|japan)\b|[\u3041-\u3096\u30a1-\u30fa]", re.IGNORECASE
    ),
    "INR": re.compile(r"\bINR\b|\u20b9|\bIndia\b"),
    "NIO": re.compile(r"\bNIO\b|c\u00f3rdoba|\bnicaragua\b", re.IGNORECASE),
}


# Chinese text: its ideographs, with none of the kana or the yen's names above.
_HAN = re.compile(r"[\u4e00-\u9fff]")


def yen_or_yuan(code: str, text: str) -> str:
    """ "¥" read as the yen (`code` "JPY") is the yuan on a page in Chinese: ideographs and
    no kana, "円", "日本", "JPY" or "yen" (`_SHARED_SIGNS`)."""
    if code == "JPY" and _HAN.search(text) and not _SHARED_SIGNS["JPY"].search(text):
        return "CNY"
    return code


def shared_sign(code: str, text: str) -> bool:
    """Whether `code` may have been read from a sign other currencies print too, with
    nothing in `text` that names it alone."""
    own = _SHARED_SIGNS.get(code)
    return own is not None and not own.search(text)


def _code(sign: str) -> str | None:
    """The ISO code of a currency sign or code price-parser found."""
    if re.fullmatch(r"[A-Z]{3}", sign):
        return sign
    return _SIGN_CODES.get(sign.lower()) or _sign_owners().get(sign.lower())


@functools.lru_cache(maxsize=1)
def _sign_owners() -> dict[str, str]:
    """Each currency sign or name that exactly one current currency prints, lower case,
    to its code (price-parser's data: 's' the usual sign, 'sn' the national one, 'n' and
    'np' its name and plural: "euro", "euros")."""
    from price_parser._currencies import CURRENCIES, REPLACED_BY_EURO

    owners: dict[str, set[str]] = {}
    for code, info in CURRENCIES.items():
        if code in REPLACED_BY_EURO:
            continue
        for key in ("s", "sn", "n", "np"):
            sign = str(info.get(key) or "").strip().lower()
            # Short signs of letters alone ("Le", "Br", "lei") are words of running text
            # as often: only a sign with a symbol in it, or a name, is read.
            if sign and sign != code.lower() and (not sign.isalpha() or len(sign) >= 4):
                owners.setdefault(sign, set()).add(code)
    return {sign: next(iter(codes)) for sign, codes in owners.items() if len(codes) == 1}
