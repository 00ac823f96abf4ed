"""The words item tables head their columns with, and the lines that end a table, in the
languages of `invoice_labels` (English, German, French, Dutch, Spanish, Italian,
Portuguese, Polish, Czech, Finnish, Norwegian, Danish, Swedish): the vocabulary of
`invoice_table`, matched as `invoice_labels` matches labels (on folded text,
the longest label wins: "Unit price" is one column, not "Unit" and "price")."""

from __future__ import annotations

import re
from functools import lru_cache

from conveyor.agents.invoice_labels import compile_labels, longest_label

# Columns of an item table, by their headers.
COLUMN_LABELS: dict[str, list[str]] = {
    "pos": [r"pos(?:ition)?\.?", r"nr\.?", r"no\.?", r"#", r"lfd\.?", r"line", r"lp\.?"],
    "description": [
        r"description",
        r"beschreibung",
        r"bezeichnung",
        r"artikel\w*",
        r"produkt\w*",
        r"leistung\w*",
        r"omschrijving",
        r"designation",
        r"libelle",
        r"article",
        r"items?",
        r"products?",
        r"services?",
        r"details?",
        r"descripcion",
        r"concepto",
        r"descrizione",
        r"prodotto",
        r"activity",
        r"(?:item|product|article)?\s*name",
        r"polozka",
        r"nazwa",
        r"tuote(?:\s*/\s*palvelu)?",
        r"text",
        # Portuguese; Norwegian, Danish, Swedish.
        r"descricao|designacao|produto|servico",
        r"beskrivelse|beskrivning|varebeskrivelse|varetekst|vare|ydelse|tjeneste|tekst",
    ],
    "quantity": [
        r"qty\.?",
        r"quantity",
        r"quantite",
        r"qte\.?",
        r"menge",
        r"anzahl",
        r"aantal",
        r"cantidad",
        r"cant\.?",
        r"quantita",
        r"qta\.?",
        # Abbreviations with their dots anywhere: "Q.tà", "Q.ty", "Uds.", "Stk.", "pcs".
        r"q\.?\s*t[aey]\.?",
        r"uds?\.?",
        r"unid(?:ades)?\.?",
        r"stk\.?",
        r"stuks?",
        r"pcs\.?",
        r"pz\.?",
        r"units?",
        r"hours",
        r"hrs\.?",
        r"count",
        r"pocet",
        r"ilosc",
        r"maara",
        r"quantidade|qtd\.?",
        r"antall|antal|ant\.|mengde|m(?:æ|ae)ngde|kvantitet",
    ],
    "price": [
        r"unit\s*price",
        r"prices?(?:\s*(?:in\s*[a-z]{3}|per\s*(?:item|unit|piece|hour)))?",
        r"rate",
        r"einzelpreis\w*",
        r"einzel\w*",
        r"e-?\s*preis",
        r"preis",
        r"nettopreis",
        r"prix(?:\s*unit(?:aire)?\.?)?",
        r"p\.?\s*u\.?",
        r"prijs",
        r"stukprijs",
        r"precio(?:\s*unit(?:ario)?\.?)?",
        r"prezzo(?:\s*unit(?:ario)?\.?)?",
        r"unit\s*cost",
        r"unitaire",
        r"cena\s*za\s*(?:polozku|jednotku|mj)",
        r"cena\s*(?:netto|jedn\.?)",
        r"a\s*-?\s*hinta",
        r"(?:valor|precio|preco)\s*unit(?:ario)?\.?",
        r"preco",
        # "Enh.pris", "Enhetspris", "Enhedspris", "à-pris", "Stykpris", "Pris".
        r"enh(?:ets|eds)?\.?\s*-?\s*pris(?:\s*\((?:ekskl|exkl|excl)\.?\s*(?:mva|moms)\))?",
        r"a\s*-?\s*pris|styk\s*-?\s*pris|pris",
    ],
    "amount": [
        r"amount",
        r"line\s*total",
        # "Total item", "Total línea", "Totale riga": the line's total, one label.
        r"total[e]?\s*(?:item|linea|line|riga|ligne|posicion)",
        r"sub\s*-?\s*total",
        r"total",
        r"betrag",
        r"gesamt\w*",
        r"nettobetrag",
        r"positions\w*",
        r"montant(?:\s*ht)?",
        r"prix\s*ht",
        r"total\s*ht",
        r"totaalbedrag",
        r"bedrag",
        r"totaal",
        r"importe",
        r"importo",
        r"net\s*amount",
        r"ext\.?\s*price",
        r"celkem(?:\s*bez\s*dane)?",
        r"wartosc\s*netto",
        r"veroton(?:\s*[a-z€]{1,3})?",
        r"valor(?:\s*total)?",
        # "Beløp (ekskl. mva)", "Belopp", "Beløb", "Summa", "Totalt".
        r"(?:belop[p]?|belob)(?:\s*\((?:ekskl|exkl|excl)\.?\s*(?:mva|moms)\))?",
        r"summa|totalt",
    ],
    "rate": [
        r"alv\s*-?\s*%?",
        r"stawka(?:\s*vat)?",
        r"ust\.?",
        r"mwst\.?",
        r"steuersatz",
        r"vat\s*%?",
        r"tax\s*%?",
        r"tva",
        r"btw",
        r"iva",
        r"(?:mva|moms)(?:\s*\(?\s*\d{1,2}(?:[.,]\d{1,2})?\s*%\s*\)?|\s*%)?",
        r"igv",
    ],
    "unit": [
        r"jedn\.?",
        r"einheit",
        r"eenheid",
        r"unidad",
        r"unita",
        r"unite",
        r"mj",
        r"unidade",
        r"enhet|enhed|enh\.?",
    ],
    "discount": [
        r"rem\.?",
        r"remise",
        r"disc\.?",
        r"dsc\.?",
        r"discount",
        r"rabatt?",
        r"korting",
        r"sconto",
        r"descuento",
        r"desconto",
    ],
}

# Lines that end an item table: sums, tax summaries, payment terms.
TABLE_END = re.compile(
    r"^(?:umsatzsteuer\w*|steuer(?:betrag|aufschl\w*)?|belegsumme\w*|zahlungsbedingung\w*|"
    r"zahlungsart|summe|gesamt\w*|subtotal|sub-total|sub total|total|tax|vat|payment|"
    r"bemerkung\w*|notes|taxe|tva|btw|iva|netto|brutto|positionssumme|zwischensumme|"
    r"rechnungsbetrag|endbetrag|conditions|betalingsinformatie|totaal|base imponible|"
    r"imponibile|amount due|balance|cena bez dane|dph|stawka vat|razem|do zaplaty|yhteensa|"
    r"maksettava|sum|summa|totalt|i alt|mva|moms|subtotaal|importe total|valor total)(?![a-z])"
)

_COLUMNS = compile_labels(COLUMN_LABELS)


@lru_cache(maxsize=65536)
def column_kind(text: str) -> str | None:
    """The item-table column a header word or cell names, or None."""
    found = longest_label(_COLUMNS, text)
    return found[0] if found else None


def column_label(text: str, start: int) -> tuple[str, int] | None:
    """(kind, end) of the column label that starts at `start` in a header cell's text:
    "Quantity Unit price Price" holds three ("Unit price" is one label of two words)."""
    return longest_label(_COLUMNS, text, start)
