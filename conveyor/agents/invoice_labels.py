"""The words invoices label their fields with, in English, German, French, Dutch, Spanish,
Italian, Portuguese, Polish and the Scandinavian languages (Norwegian, Danish, Swedish):
the one place the invoice rules keep the vocabulary of fields, sums and party
headings (an item table's column headers are in `invoice_columns`, legal forms in
`legal_forms`).

Labels are matched on folded text (`fold`: lower case, accents dropped, one character
for one, so that a match's end is an index into the original) at the start of a cell,
and the longest label of any kind wins: "Totaal bedrag excl. BTW" is the net, not the
"Totaal" it begins with; "Gesamtbetrag der Zuschläge" is a charge, not "Gesamtbetrag".
"""

# Greek and Cyrillic letters are the words' own, not look-alikes of Latin ones.
# ruff: noqa: RUF001, RUF003

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Letters with a stroke do not decompose into a base letter and an accent.
# The typographic apostrophes (U+2019, U+2018, U+02BC) fold to the ASCII one.
_STROKED = {
    "ł": "l",
    "Ł": "l",
    "ø": "o",
    "Ø": "o",
    "đ": "d",
    "Đ": "d",
    "\u0131": "i",
    # Greek's final sigma is its sigma; the numero sign (NFKD "No") is a number sign.
    "ς": "σ",
    "\u2116": "#",
    "\u2019": "'",
    "\u2018": "'",
    "\u02bc": "'",
}


def _fold_char(char: str) -> str:
    if char in _STROKED:
        return _STROKED[char]
    base = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    return (base[:1] or char).lower()[:1] or char


@lru_cache(maxsize=65536)
def fold(text: str) -> str:
    """Lower case without accents, character for character (same length as `text`)."""
    if text.isascii():
        return text.lower()
    return "".join(c.lower() if c.isascii() else _fold_char(c) for c in text)


# A label ends where its word does, in any script: "ust" is not "ustensile", "φπα" not
# "φπαx".
_END = r"(?![^\W\d_])"

# An invoice's number is labelled by a word for the document and a sign for "number",
# in either order and in any of the languages: "Factura N.º", "N.º de factura", "Rg.-Nr.",
# "Réf. facture", "Numero della fattura". One pattern for all their combinations, beside
# the fixed phrases below.
_DOCUMENT_WORD = (
    r"(?:invoice|inv|bill|rechnungs?|rg|beleg|facture|factura|fattura|factuur|faktura|"
    r"faktury|fatura\s*-\s*recibo|fatura|laskun?|statement|receipt|recibo|kvittering|kvitto|document|"
    # A till's "Ticket #", Chile's "Boleta N°".
    r"ticket|boleta|"
    # Brazil's electronic invoices: "Nota Fiscal", "NF-e", "NFC-e" (a consumer's), "NFS-e".
    r"nota\s*fiscal|nf[cs]?\s*-?\s*e|"
    # Romanian "facturii", Czech "dokladu", Hungarian "számla", Croatian and Slovene
    # "račun(a)", Lithuanian "sąskaita", Latvian "rēķins", Estonian "arve", Greek
    # "τιμολόγιο(υ)", Bulgarian "фактура(та)".
    r"facturii|dokladu?|szamla|racuna?|saskait(?:a|os)|rekin[as]|arve|"
    # Croatian "R1 račun", "Račun-otpremnica", Serbian and Croatian "fakture", Greek
    # "Τιμολόγιο παροχής υπηρεσιών", Russian "Счёт(-фактура)".
    r"r\s*-?\s*[12]\s*racun|racun\s*-\s*otpremnica|fakture|factura\s*fiscala|"
    r"τιμολογιο(?:\s*(?:παροχησ\s*υπηρεσιων|πωλησησ))?|τιμολογιου|фактура(?:та)?|"
    r"счет(?:\s*-\s*фактура)?)"
)
_NUMBER_SIGN = (
    r"(?:n\s*\.?\s*[o°º]|no|nr|nro|num|numero|number|nummer|numer|ref|#|id|"
    # Romanian "număr(ul)", Czech and Slovak "číslo", "č.", Hungarian "szám(a)", "sorszám(a)",
    # Croatian "broj", "br.", Slovene "številka", "št.", Lithuanian "numeris", Latvian
    # "numurs", Turkish "numarası", Greek "αριθμός", "αρ.", Bulgarian "номер".
    r"numar(?:ul)?|cislo|c\.|(?:sor)?szama?|broj|br|stevilka|st\.|numeris|numurs|numarasi|"
    r"αριθμοσ|αρ\.|номер)\.?"
)
_NUMBERED = [
    _DOCUMENT_WORD + r"\s*\.?\s*-?\s*" + _NUMBER_SIGN,
    _NUMBER_SIGN
    + r"\s*(?:(?:de|del|della|di|da|do|van|of|на)\s+)?(?:(?:la|het|the)\s+)?"
    + _DOCUMENT_WORD,
]

# Its date the same way: the document's word and a word for "date", in either order
# ("Rechnungsdatum", "Fakturadato", "Bill date", "Datum faktury", "Fecha de la factura",
# "Data da fatura", "Date of the invoice").
# Latvian "datums", Estonian "kuupäev", Turkish "tarih(i)", Hungarian "kelte", Greek
# "ημερομηνία", Bulgarian "дата": "Rēķina datums", "Arve kuupäev", "Fatura tarihi",
# "Számla kelte", "Дата на фактурата".
_DATE_WORD = r"(?:date|datum|dato|fecha|data|dt\.?|datums|kuupaev|tarihi?|kelte|ημερομηνια|дата)"
_DATED = [
    _DOCUMENT_WORD + r"\s*-?\s*" + _DATE_WORD,
    _DATE_WORD
    + r"\s*(?:(?:of|de|der|du|des|della|del|da|do|van|на)\s+)?(?:(?:la|het|the|il)\s+)?"
    + r"(?:invoice|bill|rechnung|facture|factura|fattura|factuur|faktury?|fatura|receipt|recibo|"
    # The act of invoicing: "Date de facturation", "Fecha de facturación", "Data di
    # fatturazione", "Datum van facturatie", "Data facturării".
    + r"facturation|facturacion|fatturazione|facturatie|faturamento|facturarii|"
    + r"facturii|racuna|fakture|szamla|τιμολογιου|фактурата|фактура|saskaitos|rekina|arve)",
]

# What a value behind each label is. Kinds starting with "-" are labels that must not be
# read as their neighbours' (an order date is not the invoice date).
FIELD_LABELS: dict[str, list[str]] = {
    "number": [
        r"invoice\s*(?:no|nr|number|num|#|n°|no\.|id)\.?",
        r"(?:statement|receipt|bill|credit\s*note|document)\s*(?:no|nr|number|#|id)\.?",
        r"inv\.?\s*(?:no|#|number)\.?",
        r"bill\s*(?:no|number|#)\.?",
        r"rechnungs?\s*-?\s*(?:nummer|nr|no)\.?",
        r"rechnung\s+(?:nr|no|nummer)\.?",
        r"beleg\s*-?\s*(?:nummer|nr)\.?",
        r"(?:n°|no|nº|numero|num)\.?\s*(?:de\s+)?(?:la\s+)?facture",
        r"facture\s*(?:n°|nº|no|numero|num)\.?",
        r"factuur\s*-?\s*(?:nummer|nr|no)\.?",
        r"factuurnr\.?",
        r"(?:n°|nº|no|numero|num)\.?\s*(?:de\s+)?factura",
        r"factura\s*(?:n°|nº|no|numero|num)\.?",
        r"(?:numero|n\.)\s*(?:della\s+)?fattura",
        r"fattura\s*(?:n°|nº|n\.|no|numero|num)\.?",
        r"faktura\s*(?:nr|no|numer|c|cislo)\.?",
        r"laskun?\s*(?:nro|numero)\.?",
        # Mexico's and Chile's "Folio" (and "Folio N°") numbers an invoice of its series.
        r"folio(?:\s*(?:n\s*\.?\s*[o°º]|no|nro)\.?)?",
        # Czech and Slovak "Číslo faktury", "Faktura č."; Hungarian "Számla sorszáma",
        # "Számlaszám"; Croatian "Broj računa", "Račun br."; Slovene "Številka računa";
        # Latvian "Rēķina Nr."; Turkish "Fatura No"; Greek "Αριθμός τιμολογίου", "Αρ.
        # Τιμολογίου"; Bulgarian "Фактура №", "Номер на фактура".
        r"(?:cislo|c\.)\s*(?:faktury|dokladu)",
        # Polish "Faktura VAT nr".
        r"faktura\s*vat\s*(?:nr|no|numer)\.?",
        r"(?:faktura|doklad)\s*(?:-\s*danovy\s*doklad\s*)?(?:cislo|c\.)",
        r"szamla\s*-?\s*(?:sor)?szam(?:a)?",
        r"(?:broj|br\.)\s*racuna|racun\s*(?:broj|br\.?)",
        r"(?:stevilka|st\.)\s*racuna|racun\s*(?:stevilka|st\.?)",
        r"(?:saskaitos|rekina)\s*(?:numeris|nr\.?)",
        r"fatura\s*(?:no|numarasi|nr)\.?",
        r"(?:αριθμοσ|αρ\.)\s*(?:τιμολογιου|παραστατικου)",
        r"(?:фактура|документ)\s*(?:#|no|номер)\.?|номер\s*(?:на\s*)?(?:фактура(?:та)?|документ)",
        *_NUMBERED,
    ],
    # A bare number sign, or a serial's ("Serial No. AA.00001"): the invoice's number
    # only at a guess, unless it stands by the title.
    "weak_number": [
        r"(?:serial\s*)?(?:nr|no|nummer|number|numero|n°|nº)\.?",
        # Romanian "Număr", Czech "Číslo", Hungarian "Sorszám", Croatian "Broj", Greek
        # "Αριθμός", Bulgarian "Номер".
        r"numar(?:ul)?|cislo|sorszam|broj|stevilka|αριθμοσ|номер",
    ],
    # Read only when no number is labelled: "Reference: MG2022" on an invoice is its number.
    "reference": [
        r"reference",
        r"referencia",
        r"referenz",
        r"riferimento",
        r"referentie",
        # A Czech or Slovak payment's variable symbol: most often the invoice's number.
        r"variabiln[iy]\s*symbol|v\.\s*s\.",
    ],
    "issue": [
        r"invoice\s*date",
        r"date\s*of\s*(?:issue|invoice)",
        r"invoice\s*dt\.?",
        r"inv\.?\s*date",
        r"issue\s*date",
        r"date\s*issued",
        r"issued(?:\s*on)?",
        r"created(?:\s*on)?",
        r"date\s*created",
        r"creation\s*date",
        r"erstellt\s*am",
        r"erstellungs\s*-?\s*datum",
        r"date\s*de\s*creation",
        r"fecha\s*de\s*creacion",
        r"data\s*di\s*creazione",
        r"billing\s*date",
        r"(?:statement|receipt|document)\s*date",
        r"facture\s*du",
        r"datum\s*(?:der\s*)?rechnung",
        r"rechnungs\s*-?\s*datum",
        r"beleg\s*-?\s*datum",
        r"ausstellungs\s*-?\s*datum",
        r"date\s*(?:de\s*)?(?:la\s*)?facture",
        r"date\s*d'?\s*emission",
        r"factuur\s*-?\s*datum",
        # "Fecha y hora de emisión": a date with its time.
        r"fecha\s*(?:y\s*hora\s*)?(?:de\s*)?(?:la\s*)?(?:factura|emision|expedicion)",
        r"data\s*(?:della\s*|da\s*)?(?:fattura|fatura)",
        r"data\s*(?:di\s*|de\s*|da\s*)?emiss(?:ione|ao)",
        r"data\s*(?:del\s*|do\s*)?documento",
        # Norwegian and Danish "Fakturadato", Swedish "Fakturadatum", and the date of issue.
        r"faktura\s*-?\s*dat(?:o|um)",
        r"(?:utstedelses|udstedelses|utfardande)\s*-?\s*dat(?:o|um)",
        r"datum\s*(?:vydani|vystaveni)",
        r"data\s*wystawienia",
        r"laskun\s*paivamaara",
        r"paivamaara",
        # Romanian "Data emiterii"; Slovak "Dátum vystavenia", "Dátum vyhotovenia";
        # Hungarian "Kelt", "Kiállítás dátuma", "Számla kelte"; Croatian "Datum izdavanja",
        # Slovene "Datum izdaje"; Lithuanian "Išrašymo data"; Latvian "Izrakstīšanas
        # datums"; Finnish "Laskun päiväys"; Turkish "Düzenleme tarihi"; Catalan "Data
        # d'emissió"; Greek "Ημερομηνία έκδοσης"; Bulgarian "Дата на издаване".
        r"data\s*(?:de\s*)?emiter(?:e|ii)",
        r"datum\s*(?:vystavenia|vyhotovenia|izdavanja|izdaje|izdavanja\s*racuna)",
        r"kelt(?:e)?",
        # The date with its time: Czech "Datum a čas vystavení", Croatian "Datum i vrijeme
        # izdavanja", Turkish "Düzenlenme tarihi".
        r"datum\s*a\s*cas\s*vystaveni|datum\s*i\s*vrijeme\s*izdavanja|duzenlenme\s*tarihi",
        r"(?:kiallitas|kibocsatas)\s*(?:datuma|kelte)",
        r"israsymo\s*data|izrakstisanas\s*datums",
        r"(?:laskun\s*)?paivays",
        r"(?:duzenleme|fatura)\s*tarihi",
        r"data\s*d'?\s*emissio",
        r"ημερομηνια\s*(?:εκδοσησ|εκδοσεωσ|τιμολογιου|παραστατικου)",
        r"ημ(?:ερ)?\.?\s*/?\s*νια\s*εκδοσησ",
        r"дата\s*на\s*(?:издаване|документа|фактурата)",
        *_DATED,
    ],
    "date": [
        r"date",
        r"datum",
        r"fecha",
        r"data",
        r"dated",
        r"dato",
        r"datums|kuupaev|tarih(?:i)?|ημερομηνια|ημ(?:ερ)?\.?\s*/\s*νια|дата",
    ],
    "due": [
        r"due\s*date",
        # The document's or the payment's word before it: "Invoice due date".
        r"(?:invoice|bill|payment)\s*due(?:\s*date)?",
        # A request to pay by a date: "Please pay until", "Kindly remit by".
        r"(?:please|kindly)\s*(?:pay|remit)(?:\s*(?:by|until|before|on\s*or\s*before))?",
        r"date\s*due",
        r"payment\s*due(?:\s*date)?",
        r"pay(?:able)?\s*by",
        r"due\s*(?:by|on)?",
        r"f[a]llig\w*(?:\s*(?:am|bis))?",
        r"zahlbar\s*bis",
        r"pay(?:ment|able)?\s*until",
        r"datum\s*splatnosti",
        r"termin\s*platnosci",
        r"erapaiva",
        r"splatnost",
        r"zahlungsziel",
        r"zahlungsfrist",
        r"date\s*d'?\s*echeance",
        r"echeance",
        r"verval\s*-?\s*(?:datum|dag)",
        r"te\s*betalen\s*voor",
        r"fecha\s*de\s*vencimiento",
        # Its abbreviation: "Fecha Venc.", "Data Vencto.", "Venc.".
        r"(?:(?:fecha|data)\s*(?:de\s*)?)?venc(?:to)?\.",
        r"vencimiento",
        r"data\s*(?:di\s*)?scadenza",
        r"scadenza",
        # "to pay before" and "payment date / deadline", in each language.
        r"(?:a\s*)?(?:payer|regler|pagar|betalen|zahlen)\s*(?:avant|au\s*plus\s*tard|antes|voor|bis)"
        r"(?:\s*(?:le|del|de|el|zum))?",
        r"payable\s*(?:avant|before|by|until)(?:\s*le)?",
        r"pagamento\s*entro(?:\s*il)?",
        r"(?:date|fecha|data)\s*limite(?:\s*(?:de|di)\s*(?:paiement|reglement|pago|pagamento))?",
        r"(?:date|fecha|data)\s*(?:de|di|du)?\s*(?:paiement|reglement|pago|pagamento)",
        r"(?:payment|zahlungs|betaal)\s*-?\s*(?:date|datum|termin)",
        r"uiterste\s*betaal\s*-?\s*datum",
        r"vence(?:\s*el)?",
        r"(?:data\s*(?:de\s*)?)?vencimento",
        r"pagar\s*ate",
        # Norwegian "Forfallsdato", Danish "Forfaldsdato", Swedish "Förfallodatum", and the
        # last day to pay: "Betalingsfrist", "Sidste rettidige betalingsdag", "Betalas senast".
        r"forfall\w*",
        r"forfald\w*",
        r"betalingsfrist",
        r"sist[ae]\s*(?:rettidige\s*)?betaln?ings?\s*dag(?:en)?",
        r"betalas\s*senast",
        # Romanian "Data scadenței", "Scadență", "Termen de plată"; Hungarian "Fizetési
        # határidő", "Esedékesség"; Croatian "Datum dospijeća", "Rok plaćanja"; Slovene
        # "Datum zapadlosti", "Rok plačila"; Lithuanian "Apmokėti iki"; Latvian "Apmaksas
        # termiņš"; Estonian "Maksetähtaeg"; Turkish "Son ödeme tarihi", "Vade tarihi";
        # Catalan "Data de venciment"; Greek "Ημερομηνία λήξης", "Προθεσμία πληρωμής";
        # Bulgarian "Срок за плащане", "Падеж".
        r"(?:data\s*)?scadent(?:a|ei)",
        r"termen\s*(?:de\s*)?plata",
        r"(?:fizetesi\s*)?hatarido|esedekesseg(?:\s*(?:datuma|napja))?",
        r"(?:datum\s*)?dospijeca|rok\s*placanja|(?:datum\s*)?zapadlosti|rok\s*placila",
        r"datum\s*valute",
        r"apmoketi\s*iki|mokejimo\s*terminas|apmaksas\s*termins|samaksat\s*lidz",
        r"maksetahtaeg|makse\s*tahtaeg|tasuda\s*hiljemalt",
        r"(?:son\s*)?odeme\s*tarihi|vade(?:\s*tarihi)?",
        r"(?:data\s*(?:de\s*)?)?venciment",
        r"ημερομηνια\s*ληξησ|προθεσμια\s*πληρωμησ|ληξη",
        r"срок\s*(?:за|на)\s*плащане|падеж",
        # Russian "Срок оплаты", "Оплатить до"; Ukrainian "Термін оплати", "Сплатити до".
        r"срок\s*оплаты|оплатить\s*до|термин\s*оплати|сплатити\s*до",
    ],
    "-date": [
        r"(?:order|delivery|ship\w*|service|po|purchase\s*order|performance)\s*date",
        r"(?:liefer|leistungs|bestell|auftrags|versand)\w*(?:\s*(?:-|und|bzw\.?)\s*\w*)*\s*datum",
        r"(?:liefer|leistungs)\w*(?:\s*(?:-|und|bzw\.?)\s*\w*)*\s*zeitraum",
        r"date\s*de\s*(?:livraison|commande)",
        r"(?:lever|order|bestel)\w*\s*datum",
        r"fecha\s*de\s*(?:entrega|pedido)",
        r"data\s*(?:de\s*|da\s*)?(?:entrega|encomenda)",
        r"(?:lever|ordre|order|bestill)\w*\s*-?\s*dato",
        r"data\s*(?:di\s*)?(?:consegna|ordine)",
        r"period\w*",
        r"abrechnungszeitraum",
        r"data\s*sprzedazy",
        r"datum\s*(?:der\s*)?(?:leistung|lieferung)(?:serbringung)?",
        # The date of the supply, not of the invoice: Romanian "Data livrării", "Data de
        # exigibilitate"; Czech "Datum uskutečnění zdanitelného plnění" (DUZP), Slovak
        # "Dátum dodania"; Hungarian "Teljesítés dátuma"; Croatian "Datum isporuke";
        # Turkish "Sevk tarihi", "Sipariş tarihi"; Greek "Ημερομηνία αποστολής"; Bulgarian
        # "Дата на данъчно събитие".
        r"data\s*(?:livrarii|de\s*exigibilitate|comenzii)",
        r"datum\s*(?:uskutecneni|zdanitelneho|dodani|dodania|isporuke|dobave|opravljene)\w*",
        r"duzp",
        r"teljesites(?:\s*(?:datuma|idopontja|kelte))?",
        r"(?:sevk|siparis|irsaliye)\s*tarihi",
        r"ημερομηνια\s*(?:αποστολησ|παραγγελιασ)",
        r"дата\s*на\s*(?:данъчно\s*събитие|доставка)",
    ],
    "-number": [
        r"(?:customer|client|account|order|po|purchase\s*order|delivery|tax|vat|contract)"
        r"\s*(?:no|nr|number|#|id)\.?",
        r"(?:kunden|bestell|auftrags|steuer|liefer|lieferschein|vertrags|mandats|konto)"
        r"\s*-?\s*(?:nummer|nr|no)\.?",
        r"ust\.?\s*-?\s*id\.?\s*-?\s*nr\.?",
        r"klant\s*-?\s*(?:nummer|nr)\.?",
        r"n°\s*(?:de\s*)?(?:client|commande|tva)",
        r"(?:n\s*\.?\s*[o°º]|numero)\s*(?:de\s*|do\s*)?(?:cliente|pedido|encomenda|cuenta|conta)",
        r"(?:kunde|kund|ordre|konto|organisasjons|organisations|bestillings)\s*-?\s*(?:nummer|nr|no)\.?",
        r"(?:org|cvr)\s*\.?\s*-?\s*(?:nummer|nr|no)\.?",
        # A CFDI's fiscal folio (its UUID) and its certificates' numbers.
        r"folio\s*fiscal|uuid",
        r"(?:numero|n\s*\.?\s*[o°º])\s*de\s*(?:serie\s*)?(?:del\s*)?certificado\w*"
        r"(?:\s*(?:del\s*)?(?:sat|emisor|csd))*",
        r"(?:your|our|votre|notre|ihre|unsere|uw|onze)\s*(?:ref\w*|reference)",
        # Registers' and orders' numbers: Romanian "Nr. Reg. Com.", "Nr. comandă"; Czech
        # "Číslo objednávky"; Hungarian "Adószám"; Turkish "Sipariş No"; Bulgarian "ЕИК".
        r"nr\.?\s*(?:reg\.?\s*com|inregistrare|comanda|contract|cont)\w*\.?",
        r"(?:cislo|c\.)\s*(?:objednavky|uctu|smlouvy|zakaznika)",
        # A payment's reference number: Estonian "Viitenumber", Finnish "Viitenumero";
        # a bank account's: Hungarian "Bankszámlaszám"; Turkey's e-invoice UUID, "ETTN".
        r"viite\s*-?\s*(?:number|numero)|viitenro|bankszamla\s*-?\s*szam\w*|ettn",
        # Czech and Slovak payments' other symbols.
        r"(?:konstantn[iy]|specifick[yi])\s*symbol",
        # Portugal's taxpayer number: "Nº de contribuinte".
        r"(?:n\s*\.?\s*[o°º]|numero)\s*(?:de\s*)?contribuinte",
        r"(?:siparis|musteri|vergi)\s*(?:no|numarasi)\.?",
    ],
}

# A sum without or with its tax is written the same way in every language: a word for the
# sum, one for "without" or "with", one for the tax ("Bedrag excl. BTW", "Summe ohne
# MwSt.", "Montant hors TVA", "Importe sin IVA", "Beløp uten mva", "Amount incl. VAT",
# "Total (inkl. moms)"); the sum's word may be left out ("Excl. VAT", "zzgl."-less "inkl.
# USt."). One pattern for all their combinations, beside the fixed phrases below.
_SUM_WORD = (
    r"(?:total[et]?|totaal|summe|summa|sum|somme|betrag|bedrag|montant|importe|importo|valor|"
    r"belop[p]?|belob|amount|gesamt\w*|kwota|wartosc|razem|celkem|"
    # Romanian "valoare (totală)", Slovak "spolu", "celkom", Croatian "iznos", "ukupno",
    # Slovene "znesek", "skupaj", Lithuanian, Latvian "suma", Turkish "toplam", "tutar",
    # Greek "σύνολο", "αξία", "ποσό", Bulgarian "сума", "стойност" (folded: "й" is "и"),
    # "общо".
    r"valoare(?:a)?(?:\s*totala)?|spolu|celkom|iznos|ukupno|znesek|skupaj|suma|toplam|tutar|"
    r"castka|vrednost|"
    r"συνολο|αξια|ποσο|сума|стоиност|общо|"
    # Russian "сумма", "итого", "всего"; Ukrainian "разом", "всього".
    r"сумма|итого|всего|разом|всього)"
)
_WITHOUT = (
    r"(?:excl|exkl|ekskl|excluding|exclusive\s*of|ex|w/o|without|before|ohne|hors|sin|senza|"
    r"sem|sans|uten|utan|uden|bez|"
    # Romanian "fără", Slovene "brez", Lithuanian "be", Estonian "ilma", Catalan "sense",
    # Greek "προ", "χωρίς", Bulgarian "без".
    r"fara|brez|be|ilma|sense|προ|χωρισ|без)\.?"
)
_WITH = (
    r"(?:incl|inkl|including|inclusive\s*of|inc|with|mit|avec|con|com|med|z|"
    # Romanian "cu", Czech "vč.", "včetně", Lithuanian "su", Latvian "ar", Greek "με",
    # Bulgarian "с".
    r"cu|vc|vcetne|su|ar|με|с)\.?"
)
_TAX_WORD = (
    r"(?:vat|tax(?:es)?|btw|tva|taxes?|mwst|ust|iva|gst|mva|moms|igv|dph|alv|impuestos?|"
    r"imposte?|steuern?|umsatzsteuer|mehrwertsteuer|podatku|"
    # Croatian "PDV", Slovene "DDV", Hungarian "ÁFA", Lithuanian "PVM", Latvian "PVN",
    # Turkish "KDV", Greek "ΦΠΑ", Bulgarian "ДДС".
    r"pdv|ddv|afa|pvm|pvn|kdv|φπα|ддс|"
    # Russian "НДС", Ukrainian "ПДВ".
    r"ндс|пдв)\.?"
)
# A tax's word before its total: "TVA total", "DPH celkem", "PDV ukupno", "KDV toplam".
_TAX_TOTAL = (
    _TAX_WORD + r"\s*(?:total[a]?|celkem|celkom|spolu|ukupno|skupaj|kokku|osszesen|yhteensa|"
    r"toplam|συνολο|общо)"
)


def _with_tax(word: str) -> str:
    # In parentheses only after the sum's word: "(ekskl. mva)" alone qualifies a column.
    return rf"(?:{_SUM_WORD}\s*\(?\s*{word}\s*{_TAX_WORD}\s*\)?|{word}\s*{_TAX_WORD})"


SUM_LABELS: dict[str, list[str]] = {
    "net": [
        _with_tax(_WITHOUT),
        r"sub\s*-?\s*total",
        r"subtotaal",
        r"net\s*(?:amount|total|value|sum)",
        r"total\s*net(?:\s*h\.?t\.?)?",
        r"netto\s*-?\s*(?:betrag|summe|gesamt|rechnungsbetrag)?",
        r"nettobetrag",
        r"summe\s*netto",
        r"gesamt\s*-?\s*(?:betrag\s*|summe\s*)?netto",
        r"rechnungssumme\s*ohne\s*(?:ust|mwst|umsatzsteuer)\.?",
        r"(?:gesamt)?summe\s*(?:ohne|exkl\.?|excl\.?)\s*(?:ust|mwst)\.?",
        r"zwischensumme(?:\s*\(?netto\)?)?",
        r"total\s*(?:excl\.?|excluding|before|w/o|without|ex\.?)\s*(?:vat|tax|taxes|btw|tva|mwst|gst)?",
        r"total\s*h\.?t\.?",
        r"montant\s*h\.?t\.?",
        r"montant\s*total\s*h\.?t\.?",
        r"total\s*hors\s*taxes?",
        r"sous\s*-?\s*total",
        r"totaal\s*(?:bedrag\s*)?excl\.?\s*(?:btw)?",
        r"base\s*imponible",
        r"(?:totale\s*)?imponibile",
        r"taxable\s*(?:amount|value|total)",
        r"(?:amount|total)\s*before\s*tax(?:es)?",
        r"cena\s*bez\s*dane",
        r"(?:razem\s*)?netto",
        r"veroton(?:\s*yhteensa)?",
        r"zaklad\s*dane",
        r"wartosc\s*netto",
        r"(?:total|importe|valor|precio|monto)?\s*(?:neto|sin\s*iva|sem\s*iva|s/\s*iva)",
        r"(?:valor|total)\s*(?:liquido|iliquido|sem\s*iva)",
        # Peru's and Latin America's taxable operations: the base the IGV is charged on.
        r"(?:op\.?|operaciones)\s*gravadas",
        # Norwegian, Danish, Swedish: the sum, total or amount without VAT ("mva", "moms").
        r"(?:sum(?:ma)?|total[t]?|belop[p]?|belob)\s*(?:ekskl|exkl|excl|uten|utan|uden)\.?\s*(?:mva|moms)\.?",
        r"delsumma|mellomsum",
        # Romanian "Valoare netă"; Slovak "Základ dane"; Hungarian "Nettó összesen", "ÁFA
        # nélkül"; Croatian "Osnovica"; Slovene "Osnova za DDV"; Estonian "Summa km-ta";
        # Turkish "Ara toplam", "Mal hizmet toplam tutarı", "KDV hariç toplam", "KDV
        # matrahı"; Catalan "Base imposable"; Greek "Καθαρή αξία", "Υποσύνολο"; Bulgarian
        # "Данъчна основа".
        r"valoare(?:a)?\s*(?:totala\s*)?neta|total\s*net",
        r"netto\s*(?:osszesen|ertek|osszeg|vegosszeg)|afa\s*nelkul\w*(?:\s*(?:osszeg|ertek))?",
        r"(?:porezna\s*)?osnovica(?:\s*(?:za\s*)?pdv)?|osnova(?:\s*za\s*ddv)?|zaklad\s*dph",
        r"(?:summa|kokku)\s*(?:km\s*-?\s*ta|kaibemaksuta)|kaibemaksuta\s*summa",
        r"ara\s*toplam|mal\s*(?:ve\s*)?hizmet\s*toplam\s*tutari",
        r"kdv\s*haric(?:\s*(?:toplam|tutar))?|(?:kdv\s*)?matrah\w*",
        r"base\s*imposable|import\s*net",
        # Greek "Αξία" alone, among the sums, is the value before its ΦΠΑ.
        r"(?:καθαρη\s*)?αξια|(?:συνολο\s*)?καθαρησ\s*αξιασ|καθαρο(?:\s*ποσο)?|υποσυνολο",
        r"данъчна\s*основа|нето",
    ],
    "lines": [
        r"positionssumme",
        r"summe\s*(?:der\s*|aller\s*)?positionen(?:\s*netto)?",
        r"line\s*total",
        r"total\s*(?:of\s*)?(?:items|lines)",
        # Portuguese: "Valor total dos produtos", "Total dos produtos e serviços".
        r"(?:valor\s*)?total\s*dos\s*(?:produtos|servicos)(?:\s*e\s*servicos)?",
    ],
    "tax": [
        # Brazil's taxes, each by its name: "Valor do ICMS", "Valor do ICMS ST", "Valor do
        # IPI", "Valor do ISS".
        r"valor\s*(?:total\s*)?do\s*(?:icms(?:\s*st)?|ipi|issqn|iss|pis|cofins)",
        # A sum's word straight before the tax's is the tax's total in every language, as
        # "Total VAT" is: "Summe Umsatzsteuer", "Summe MwSt.", "Totale IVA", "Somme TVA".
        rf"{_SUM_WORD}\s*(?:der\s*|de\s*(?:la\s*)?|del\s*)?{_TAX_WORD}",
        r"(?:total\s*)?(?:sales\s*)?tax(?:es)?(?:\s*(?:total|amount))?",
        r"vat(?:\s*(?:total|amount))?",
        r"total\s*(?:vat|tax|taxes|tva|iva|gst)",
        r"gst|hst|pst|qst",
        r"[csiu]t?gst",
        r"mwst\.?",
        r"ust\.?",
        r"umsatzsteuer(?:betrag)?",
        r"mehrwertsteuer",
        # The tax inside gross prices: "enthaltene MwSt.", "darin enthaltene USt."
        r"(?:darin\s*)?enthaltene\s*(?:mwst|ust|umsatzsteuer|mehrwertsteuer)\.?",
        r"impostos?",
        r"steuerbetrag(?:\s*in)?",
        r"steuer",
        r"tva",
        r"montant\s*(?:de\s*)?(?:la\s*)?tva",
        r"total\s*taxes",
        r"btw(?:\s*-?\s*bedrag)?",
        r"totaal\s*(?:bedrag\s*)?btw",
        r"iva",
        r"importe\s*(?:del\s*)?iva",
        r"imposta",
        r"(?:total\s*(?:de\s*)?)?impuestos?(?:\s*trasladados)?",
        # Mexico's CFDI: a tax charged is "trasladado", one withheld "retenido".
        r"traslados?(?:\s*(?:de\s*)?(?:iva|ieps|isr))?",
        r"dph",
        r"kwota\s*vat",
        r"alv(?:\s*(?:yhteensa|e))?",
        # Norway's "mva" (merverdiavgift), Denmark's and Sweden's "moms" (mervärdesskatt),
        # Peru's IGV, the Dominican ITBIS.
        r"(?:total\s*|sum\s*|summa\s*)?(?:mva|moms)(?:\s*-?\s*(?:belop[p]?|belob))?",
        r"merverdiavgift|mervardes\s*skatt",
        r"igv|itbis",
        # "TVA total"; Hungarian "ÁFA összeg"; Turkish "Hesaplanan KDV"; Estonian
        # "Käibemaks"; Finnish "Arvonlisävero"; Bulgarian "Начислен ДДС".
        _TAX_TOTAL,
        r"pdv|ddv|afa|pvm|pvn|kdv|φπα|ддс",
        r"afa\s*(?:osszeg|ertek)\w*|hesaplanan\s*kdv|kaibemaks|arvonlisavero|vyse\s*dph",
        r"(?:начислен|сума\s*на)\s*ддс",
        r"(?:ποσο|αξια)\s*φπα",
        # Russian "В т.ч. НДС", "В том числе НДС": the tax inside the total.
        r"(?:в\s*т\.?\s*ч\.?|в\s*том\s*числе)\s*(?:ндс|пдв)",
        r"ндс|пдв",
    ],
    "gross": [
        _with_tax(_WITH),
        r"grand\s*total",
        r"invoice\s*total",
        r"total\s*amount",
        r"total\s*(?:incl\.?|including|inc\.?|with)\s*(?:vat|tax|taxes|btw|tva|mwst|gst)?",
        r"total\s*(?:net\s*)?t\.?t\.?c\.?",
        r"montant\s*t\.?t\.?c\.?",
        r"montant\s*total(?:\s*t\.?t\.?c\.?)?",
        r"total\s*toutes\s*taxes\s*comprises",
        r"total(?:\s*\([a-z]{3}\)|\s*[a-z]{3})?",
        r"gesamt\s*-?\s*(?:betrag|summe)(?:\s*brutto)?|gesamt\s*brutto",
        r"bruttosumme",
        r"brutto\s*-?\s*(?:betrag|summe)?",
        r"rechnungs\s*-?\s*(?:betrag|summe|total)",
        r"endbetrag",
        r"endsumme",
        r"summe(?:\s*brutto)?",
        r"totaal(?:\s*bedrag)?(?:\s*incl\.?\s*(?:btw)?)?",
        r"importe\s*total",
        # Chile's and Latin America's "Monto total".
        r"monto\s*total",
        r"invoice\s*amount",
        r"total\s*(?:de\s*(?:la\s*)?)?factura",
        r"totale(?:\s*(?:fattura|documento|complessivo))?",
        # The amount word alone: a payment slip's "Montant", "Importo", "Betrag", "Amount"
        # (an item table's column of that name is the table's, not a sum's).
        r"montant|importo(?:\s*totale)?|betrag|amount",
        r"valor\s*total(?:\s*d[ao]\s*(?:nota|nf\S*|fatura|factura|documento))?",
        r"celkem(?:\s*k\s*uhrade)?",
        r"razem(?:\s*brutto)?",
        r"(?:wartosc\s*)?brutto",
        r"verollinen(?:\s*yhteensa)?",
        r"yhteensa",
        r"(?:order|grand|invoice)\s*total",
        r"total\s*(?:con\s*iva|com\s*iva|general|geral|da\s*fatura)",
        # Norwegian, Danish, Swedish: the sum or total with VAT, "Totalt", "I alt", "Sum".
        r"(?:sum(?:ma)?|total[t]?|belop[p]?|belob)\s*(?:inkl|incl|med)\.?\s*(?:mva|moms)\.?",
        r"totalt|totalsum|totalbelop[p]?|i\s*alt",
        r"sum(?:ma)?",
        # Romanian "Valoare totală", "Total general", "Total de plată"; Slovak "Spolu",
        # "Celkom"; Hungarian "Végösszeg", "Összesen", "Bruttó összesen"; Croatian "Ukupno",
        # "Sveukupno";
        # Slovene "Skupaj"; Lithuanian "Iš viso"; Latvian "Kopā"; Estonian "Kokku", "Arve
        # summa"; Turkish "Genel toplam", "Vergiler dahil toplam tutar"; Catalan "Import
        # total"; Greek "Σύνολο", "Γενικό σύνολο"; Bulgarian "Общо", "Обща сума".
        r"valoare(?:a)?\s*totala|total\s*general|total\s*(?:de\s*)?plata",
        r"(?:spolu|celkom)(?:\s*k\s*uhrade)?|celkova\s*(?:suma|castka)|suma\s*celkom",
        r"vegosszeg|(?:mindosszesen|osszesen)|brutto\s*(?:osszesen|ertek|osszeg|vegosszeg)",
        r"szamla\s*(?:vegosszege|osszege)",
        r"(?:sve)?ukupno(?:\s*(?:s|sa)\s*pdv\w*)?|skupaj(?:\s*z\s*ddv)?|znesek\s*z\s*ddv",
        r"ukupan\s*iznos|(?:skupaj|ukupno)\s*za\s*(?:placilo|platiti|placanje)",
        r"is\s*viso(?:\s*su\s*pvm)?|kopa(?:\s*(?:ar\s*pvn|apmaksai))?|kokku(?:\s*km\s*-?\s*ga)?",
        r"arve\s*summa|bendra\s*suma(?:\s*su\s*pvm)?",
        r"genel\s*toplam|(?:vergiler|kdv)\s*dahil\s*(?:toplam\s*)?(?:tutar\w*)?|toplam(?:\s*tutar)?",
        r"import\s*total",
        r"(?:γενικο\s*)?συνολο(?:\s*(?:τιμολογιου|πληρωμησ))?|συνολικη\s*αξια|τελικο\s*ποσο",
        r"общо(?:\s*(?:сума|стоиност))?|обща\s*(?:сума|стоиност)|всичко",
        # Russian "Итого", "Всего к оплате"; Ukrainian "Разом", "Всього до сплати".
        r"итого(?:\s*к\s*оплате)?|всего(?:\s*к\s*оплате)?|разом(?:\s*до\s*сплати)?|"
        r"всього(?:\s*до\s*сплати)?",
    ],
    "due": [
        r"amount\s*due",
        r"fallige[rns]?\s*(?:betrag|summe)(?:\s*brutto)?",
        r"total\s*amount\s*due",
        r"balance\s*due",
        r"total\s*due",
        r"amount\s*payable",
        r"zahlbetrag",
        r"zu\s*zahlen(?:der\s*betrag)?",
        r"(?:offener|noch\s*offener)\s*betrag",
        r"restbetrag",
        r"solde\s*(?:a\s*payer|du)",
        r"net\s*a\s*payer",
        r"(?:montant\s*)?total\s*a\s*payer",
        r"montant\s*a\s*payer",
        r"reste\s*a\s*payer",
        r"te\s*betalen(?:\s*bedrag)?",
        r"importe\s*a\s*pagar",
        r"(?:total|valor|importe|montante)\s*(?:total\s*)?a\s*pagar",
        r"(?:totale\s*)?da\s*pagare",
        r"do\s*zaplaty",
        r"maksettava(?:\s*yhteensa)?",
        # Norwegian "(Beløp) å betale", Danish "At betale", Swedish "(Summa) att betala".
        r"(?:(?:sum(?:ma)?|belop[p]?|belob|totalt?)\s*)?(?:a|at|att)\s*betal[ea]",
        r"til\s*betaling",
        # Romanian "Rest de plată" (its "Total de plată" is the total); Czech "K úhradě"; Hungarian
        # "Fizetendő"; Croatian "Za platiti", "Za plaćanje"; Slovene "Za plačilo";
        # Lithuanian "Mokėti"; Latvian "Summa apmaksai"; Estonian "Tasuda"; Finnish
        # "Maksettava"; Turkish "Ödenecek tutar"; Greek "Πληρωτέο"; Bulgarian "Сума за
        # плащане".
        r"rest\s*(?:de\s*)?plata",
        r"(?:(?:suma|castka)\s*)?(?:k|na)\s*uhrad[eu]",
        r"fizetendo(?:\s*(?:osszeg|vegosszeg|osszesen))?",
        r"za\s*(?:platiti|placanje|placilo)",
        r"(?:is\s*viso\s*)?moketi|(?:summa\s*)?apmaksai|tasuda|(?:kokku\s*)?tasumisele",
        r"odenecek\s*(?:tutar|toplam)\w*",
        r"πληρωτεο(?:\s*ποσο)?|ποσο\s*πληρωμησ",
        r"(?:сума\s*)?за\s*плащане",
    ],
    # Charges and discounts between the net and the total: net + tax + charges -
    # discounts = gross.
    "charge": [
        r"valor\s*do\s*(?:frete|seguro)|outras\s*despesas(?:\s*acessorias)?",
        r"shipping(?:\s*(?:&|and)\s*handling)?(?:\s*(?:charges?|costs?|fees?))?",
        r"handling(?:\s*(?:charges?|fees?))?",
        r"freight",
        r"delivery\s*(?:charges?|costs?|fees?)",
        r"s\s*&\s*h",
        r"postage",
        r"versand\w*",
        r"porto\w*",
        r"verpackung\w*",
        r"fracht\w*",
        r"frais\s*de\s*(?:port|livraison|transport|envoi)",
        r"verzend\w*",
        r"gastos\s*de\s*(?:envio|transporte)",
        r"spese\s*di\s*(?:spedizione|trasporto)",
        r"portes(?:\s*de\s*envio)?",
        r"frete",
        r"frakt\w*|fragt\w*",
    ],
    "discount": [
        r"(?:less\s*)?discount",
        r"rabatt",
        r"nachlass",
        r"remise",
        r"korting",
        r"descuento",
        r"sconto",
        r"desconto",
        r"rabais",
        r"rabat\w*",
        r"reducere|sleva|zlava|kedvezmeny|popust|iskonto|nuolale|atlaide|allahindlus|"
        r"alennus|descompte|εκπτωση|отстъпка",
        r"toplam\s*iskonto",
    ],
    # Taxes withheld by the buyer, taken off the total: Mexico's "ISR retenido", Spain's
    # "Retención IRPF", Italy's "Ritenuta d'acconto", Portugal's "Retenção na fonte",
    # "Withholding tax", "Retenue à la source", "Quellensteuer".
    "withheld": [
        r"(?:isr|iva|irpf|irrf|ir)\s*retenid[oa]",
        r"(?:total\s*(?:de\s*)?)?impuestos?\s*retenidos",
        r"retencion(?:\s*(?:de\s*)?(?:isr|iva|irpf|i\.?r\.?p\.?f\.?))?(?:\s*\(?\d{1,2}(?:[.,]\d{1,2})?\s*%\)?)?",
        r"retenc(?:ao|oes)(?:\s*na\s*fonte)?(?:\s*(?:de\s*)?(?:irs|irc))?",
        r"(?:less\s*)?withholding(?:\s*tax)?|(?:tax\s*)?withheld",
        r"ritenuta(?:\s*d'?\s*acconto)?",
        r"retenue\s*a\s*la\s*source",
        r"quellensteuer",
        # Greek "Παρακράτηση φόρου", "Παρακρατήθηκε φόρος"; Turkish "Tevkifat".
        r"παρακρατ\w*(?:\s*φορου?σ?)?|φοροσ\s*παρακρατησησ",
        r"(?:kdv\s*)?tevkifat\w*",
    ],
    "-sum": [
        # A tax's base, not a sum: "Base de cálculo do ICMS", "Base imponible" stays a net.
        r"base\s*de\s*calculo(?:\s*do\s*\w+(?:\s*st)?)?",
        r"balance",
        r"residual",
        r"(?:amount\s*)?paid",
        r"payments?(?:\s*received)?",
        r"deposit",
        r"prepaid|prepayment",
        r"already\s*paid",
        r"(?:erhaltene\s*)?anzahlung\w*",
        r"gezahlte[rn]?\s*betrag|bereits\s*(?:gezahlt|bezahlt)\w*",
        # A rounding is neither a sum nor its part; an allowance's or a charge's base
        # amount is what it is reckoned on.
        r"rundung\w*|rounding(?:\s*(?:amount|difference))?|arrondi\w*|grundbetrag",
        r"offene\s*zahlungen",
        r"acompte",
        r"deja\s*paye",
        r"betaald",
        r"gesamtbetrag\s*der\s*(?:zu|ab)schlage",
        r"summe\s*(?:der\s*)?(?:zu|ab)schlage",
        r"total\s*(?:allowances|charges|discounts?)",
        r"(?:previous|prior)\s*balance",
        r"skonto",
        r"total\s*hours",
        r"zaplacono|zaplaceno|maksettu",
        # What a till receipt prints after its total: how it was paid, and the change.
        r"change(?:\s*due)?",
        r"cash(?:\s*tendered)?",
        r"tendered",
        r"(?:credit\s*|debit\s*)?card",
        r"visa|mastercard|amex|maestro",
        r"tip|gratuity|trinkgeld|pourboire|propina|mancia|fooi",
        r"rueckgeld|ruckgeld|wechselgeld|rendu|monnaie\s*rendue|cambio|resto|wisselgeld",
        # A tax's base beside its rate: Romanian "Bază (de) calcul"; what was paid: Romanian
        # "Sumă plătită", "Avans", Czech "Zaplaceno záloha", Hungarian "Fizetve", Turkish
        # "Ödenen"; a rounding: "Rotunjire", "Zaokrouhlení", "Kerekítés", "Yuvarlama".
        r"baza\s*(?:de\s*)?calcul",
        r"suma\s*platita|avans\w*|zaloha|uhrazeno|fizetve|odenen|placeno|placano",
        r"rotunjire|zaokrouhleni|kerekites|zaokruzivanje|yuvarlama|στρογγυλοποιηση",
    ],
}

# The seller's and the buyer's blocks, by their headings.
PARTY_HEADINGS: dict[str, list[str]] = {
    "seller": [
        r"(?:vendor|supplier|seller|company)\s*name",
        r"verkaufer",
        r"lieferant",
        r"rechnungssteller",
        r"leistungserbringer",
        r"seller",
        r"supplier",
        r"vendor",
        r"from",
        r"issued\s*by",
        r"bill(?:ed)?\s*from",
        r"pay(?:able)?\s*to",
        r"(?:service\s*)?provider",
        r"biller",
        r"issuer",
        r"aussteller",
        r"auftragnehmer",
        r"prestataire",
        r"emittente",
        r"prodejce",
        r"sprzedawca",
        r"myyja",
        r"dodavatel",
        r"fournisseur",
        r"vendeur",
        r"emetteur",
        r"leverancier",
        r"verkoper",
        r"proveedor",
        r"vendedor",
        r"emisor",
        r"fornitore",
        r"venditore",
        r"cedente",
        r"prestador",
        r"emitente",
        r"fornecedor",
        # A payment notice's creditor is the one who is paid: "Ente creditore",
        # "Gläubiger", "Créancier", "Acreedor", "Credor", "Creditor".
        r"(?:ente\s*)?creditore|glaubiger|creancier|acreedor|credor|creditor",
        r"selger|s(?:æ|ae)lger|saljare",
        r"leverandor|leverantor",
        # "Datos del emisor", "Dados do emitente", "Données du fournisseur".
        r"(?:datos|dati|dados|donnees)\s*(?:du|del|de|do|dello)?\s*(?:emisor|emitente|emittente|"
        r"vendedor|proveedor|fornitore|fornecedor|fournisseur|prestataire)",
        # A payment slip's payee, under its account: "Compte / Payable à", "Konto /
        # Zahlbar an", "Account / Payable to".
        r"(?:(?:compte|conto|konto|account)\s*/\s*)?(?:payable\s*(?:a|to)|pagabile\s*a|zahlbar\s*an)",
        # Romanian "Furnizor", "Vânzător", "Prestator"; Czech "Prodávající"; Slovak
        # "Predávajúci"; Hungarian "Eladó", "Szállító", "Kibocsátó"; Croatian "Prodavatelj",
        # "Izdavatelj", "Dobavljač"; Slovene "Prodajalec", "Izdajatelj", "Dobavitelj";
        # Lithuanian "Pardavėjas", "Tiekėjas"; Latvian "Pārdevējs", "Piegādātājs"; Estonian
        # "Müüja"; Finnish "Laskuttaja", "Toimittaja"; Turkish "Satıcı"; Catalan
        # "Proveïdor", "Venedor", "Emissor"; Greek "Εκδότης", "Προμηθευτής", "Πωλητής",
        # "Στοιχεία εκδότη"; Bulgarian "Доставчик", "Продавач", "Издател".
        r"furnizor(?:ul)?|vanzator(?:ul)?|prestator(?:ul)?",
        r"prodavajici|predavajuci",
        r"elado|szallito|kibocsato|szamlakibocsato",
        r"prodavatelj|izdavatelj|dobavljac|prodajalec|izdajatelj|dobavitelj|izdavalac",
        r"pardavejas|tiekejas|pardevejs|piegadatajs|muuja",
        r"laskuttaja|toimittaja",
        r"satici(?:\s*bilgileri)?",
        r"proveidor|venedor|emissor",
        r"(?:στοιχεια\s*)?(?:εκδοτη|εκδοτησ|προμηθευτη|προμηθευτησ|πωλητη|πωλητησ)",
        r"доставчик|продавач|издател|изпълнител",
        # Russian "Поставщик", "Продавец", "Исполнитель"; Ukrainian "Постачальник".
        r"поставщик|продавец|исполнитель|постачальник|продавець|виконавець",
    ],
    "buyer": [
        r"(?:customer|client|buyer)\s*name",
        r"(?:customer|client|buyer)\s*(?:details|information|info)",
        r"kunden\s*-?\s*name",
        r"nom\s*du\s*client",
        r"naam\s*(?:van\s*de\s*)?klant",
        r"nombre\s*del\s*cliente",
        r"nome\s*(?:del\s*)?cliente",
        r"bill(?:ed)?\s*to",
        r"invoice(?:d)?\s*to",
        r"sold\s*to",
        r"customer",
        r"client",
        r"buyer",
        r"purchaser",
        r"recipient",
        r"empfanger",
        r"kupujici",
        r"odberatel",
        r"nabywca",
        r"ostaja",
        r"kaufer(?:\s*/\s*leistungsempfanger)?",
        r"rechnungsempfanger",
        r"auftraggeber",
        r"leistungsempfanger",
        r"rechnungsadresse",
        r"kunde",
        r"facture\s*a",
        r"factur[ee]\s*a",
        r"adresse\s*de\s*facturation",
        r"acheteur",
        r"klant",
        r"factuuradres",
        r"koper",
        r"cliente",
        r"facturar\s*a",
        r"comprador",
        r"destinatario",
        r"cessionario",
        r"tomador",
        r"adquirente",
        r"intestatario",
        r"destinataire",
        r"to(?=\s*:)",
        # "An" / "Aan" alone over an address block, and "<invoice> to" in any language:
        # "Rechnung an", "Factuur aan", "Fatturare a", "Facturado a".
        r"aa?n(?=\s*:?\s*$)",
        r"(?:factur\w*|fattur\w*|factuur|rechnung|bill\w*|invoice\w*)\s+(?:to|a|aan|an|al|para)(?![a-z])",
        r"adresse?e?\s*a(?![a-z])",
        # "Datos del cliente", "Dati del cliente", "Customer details", "Klantgegevens".
        r"(?:datos|dati|dados|donnees|coordonnees)\s*(?:du|del|de|do|dello)?\s*"
        r"(?:client|cliente|acheteur|receptor|destinatario|comprador|adquirente)",
        r"receptor",
        # A receipt's consumer: "Consumidor", "Verbraucher", "Consommateur".
        r"consumidor|consumer|verbraucher|consommateur|consumatore",
        # Norwegian "Kjøper", Danish "Køber", Swedish "Köpare", "Kund"; the billing address.
        r"kjoper|k(?:ø|o)ber|kopare|kund",
        r"faktura\s*-?\s*adresse?|fakturerings\s*-?\s*adresse|mottaker|mottagare|modtager",
        r"(?:klant|kunden)\s*-?\s*(?:gegevens|daten)",
        r"sr(?:es|a)?\.?\s*\(\s*(?:s|es)\s*\)",  # "Sr.(s):", "Sres.(es)", letters to one or more
        r"senor(?:es|a)?",
        # Portuguese "Exmo.(s) Sr.(s)", "Exmos. Senhores".
        r"exm[oa]s?\.?(?:\s*\(s\))?\s*(?:sr|senhor)\w*\.?(?:\s*\(s\))?",
        r"spett\.?\s*le",
        r"spettabile",
        # A payment slip's payer: "Payable par", "Pagabile da", "Zahlbar durch".
        r"payable\s*par|pagabile\s*da|zahlbar\s*durch",
        r"titulaire(?:\s*du\s*compte)?",
        r"account\s*holder",
        # Romanian "Cumpărător", "Beneficiar"; Slovak "Odberateľ", "Kupujúci"; Hungarian
        # "Vevő", "Megrendelő", "Vásárló"; Croatian "Kupac", "Naručitelj"; Slovene "Kupec",
        # "Naročnik", "Prejemnik"; Lithuanian "Pirkėjas"; Latvian "Pircējs", "Saņēmējs";
        # Estonian "Ostja", "Maksja"; Finnish "Asiakas", "Laskun saaja"; Turkish "Alıcı",
        # "Müşteri", "Sayın"; Catalan "Client"; Greek "Πελάτης", "Αγοραστής", "Στοιχεία
        # πελάτη"; Bulgarian "Получател", "Купувач", "Клиент".
        r"cumparator(?:ul)?|beneficiar(?:ul)?",
        r"kupujuci",
        r"vevo|megrendelo|vasarlo",
        r"kupac|narucitelj|narucilac|kupec|narocnik|prejemnik",
        r"pirkejas|pircejs|sanemejs|ostja|maksja",
        r"asiakas|laskun\s*saaja",
        r"alici(?:\s*bilgileri)?|musteri(?:\s*bilgileri)?|sayin",
        r"(?:στοιχεια\s*)?(?:πελατη|πελατησ|αγοραστη|αγοραστησ|λημπτη|ληπτη)",
        r"получател|купувач|клиент|възложител",
        # Russian "Покупатель", "Заказчик", "Плательщик"; Ukrainian "Покупець", "Замовник".
        r"покупатель|заказчик|плательщик|покупець|замовник|платник",
    ],
    "other": [
        r"ship\s*to",
        r"deliver(?:y|ed)?\s*(?:to|address)",
        r"shipping\s*address",
        r"(?:abweichender\s*)?warenempfanger",
        r"abweichender\s*(?:zahlungs|rechnungs)empfanger",
        r"liefer\s*-?\s*(?:adresse|anschrift)",
        r"adresse\s*de\s*livraison",
        r"livre\s*a",
        r"afleveradres",
        r"leverings\s*-?\s*adresse|leverans\s*-?\s*adress|(?:morada|endereco)\s*de\s*entrega",
        r"leveringsadres",
        r"direccion\s*de\s*(?:envio|entrega)",
        r"indirizzo\s*di\s*(?:consegna|spedizione)",
        r"bemerkung\w*",
        r"remit\s*to",
        r"payee",
        r"adresa\s*(?:de\s*)?livrare|dodaci\s*adresa|szallitasi\s*cim|teslimat\s*adresi",
        r"τοποσ\s*παραδοσησ|адрес\s*(?:за|на)\s*доставка",
    ],
}

NAME_LABELS = [
    r"name",
    r"firmen\s*-?\s*name",
    r"(?:company|business|legal|trading|firm)\s*name",
    r"firma",
    r"company",
    r"nom",
    r"nome(?:\s*empresarial)?",
    r"raison\s*sociale",
    r"razao\s*social",
    r"ragione\s*sociale",
    r"denominacion(?:\s*social)?",
    r"naam",
    r"nombre",
    # Romanian "Nume", "Denumire"; Czech "Název", "Obchodní jméno"; Slovak "Názov",
    # "Obchodné meno"; Hungarian "Név", "Cégnév"; Croatian, Slovene "Naziv", "Ime";
    # Lithuanian, Latvian "Pavadinimas", "Nosaukums"; Estonian, Finnish "Nimi"; Turkish
    # "Unvan", "Ünvanı", "Adı Soyadı"; Catalan "Raó social"; Greek "Επωνυμία",
    # "Ονοματεπώνυμο"; Bulgarian "Наименование", "Име". Words that also head an item
    # table's column of descriptions ("Denumire", "Naziv", "Název", "Pavadinimas",
    # "Nosaukums", "Наименование") name a party only with their colon.
    r"nume|(?:denumire(?:a)?|nazev|nazov|naziv|pavadinimas|nosaukums|наименование)(?=\s*:)",
    r"obchodni\s*jmeno|obchodne\s*meno",
    r"nev|cegnev",
    r"ime",
    r"nimi",
    r"unvan(?:i)?|ad(?:i)?\s*soyad(?:i)?",
    r"rao\s*social",
    r"επωνυμια|ονοματεπωνυμο|ονομα",
    r"име",
]

# "Attention: John Doe" in a buyer's block: the person it is addressed to, its name when
# the block has no name line of its own (it opens with the street).
ATTENTION = re.compile(
    r"^(?:attention|attn\.?|z\.?\s*h(?:d|anden)\.?|a\s*l'?\s*attention\s*(?:de)?|"
    r"t\.?\s*a\.?\s*v\.?|a\s*la\s*atencion\s*de|atencion|all'?\s*attenzione\s*(?:di)?)\s*:\s*"
)

# A note that no VAT is charged: a small business's exemption, an exempt supply. With it,
# a net printed alone is what the invoice asks for.
NO_VAT = re.compile(
    r"kein\w*\s+ausweis\s+(?:der|von)\s+(?:umsatzsteuer|mehrwertsteuer)|\b19\s*ustg|"
    r"kleinunternehmer|umsatzsteuerfrei|"
    r"vat\s+(?:is\s+)?not\s+applicable|not\s+subject\s+to\s+vat|vat\s+exempt|exempt\s+from\s+vat|"
    r"small\s+business\s+exemption|"
    r"tva\s+non\s+applicable|293\s*b\s+du\s+cgi|exoner\w*\s+de\s+tva|"
    r"vrijgesteld\s+van\s+btw|btw\s+vrijgesteld|kleineondernemersregeling|"
    r"exent[oa]\s+de\s+iva|iva\s+no\s+aplicable|esente\s+iva|regime\s+forfettario|"
    r"isent[oa]\s+de\s+iva|iva\s+isento|zwolnion\w*\s+z\s+(?:podatku\s+)?vat|"
    r"fritatt\s+(?:for\s+)?mva|ikke\s+mva\s*-?\s*pliktig|momsfri|fritaget\s+for\s+moms|"
    r"undantag\w*\s+fran\s+(?:skatteplikt|moms)|"
    # Czech "neplátce DPH", Romanian "neplătitor de TVA", Hungarian "alanyi adómentes",
    # Croatian "nije u sustavu PDV-a", Slovene "ni zavezanec za DDV", Greek "απαλλάσσεται
    # του ΦΠΑ", Bulgarian "не е регистриран по ДДС".
    r"neplatce\s+dph|neplatitor\s+de\s+tva|alanyi\s+adomentes|nije\s+u\s+sustavu\s+pdv|"
    r"ni\s+zavezanec\s+za\s+ddv|απαλλασσ\w*\s+(?:του\s+|απο\s+)?φπα|"
    r"не\s+е\s+регистриран\s+по\s+ддс"
)

# Invoice titles: the word, alone or ending a compound ("Handelsrechnung").
TITLE = re.compile(
    r"^(?:[a-z]*rechnung|tax\s*invoice|invoice|facture|factuur|factura|fattura|faktura|fatura|lasku|"
    r"receipt|recibo|ricevuta|kvittering|kvitto|quittung|"
    r"credit\s*note|gutschrift|avoir|creditnota|nota\s*de\s*credito|"
    # Hungarian "Számla", Croatian and Slovene "Račun", Lithuanian "Sąskaita faktūra",
    # Latvian "Rēķins", Estonian "Arve", Greek "Τιμολόγιο", "Απόδειξη", Bulgarian
    # "Фактура".
    r"szamla|racun|(?:pvm\s*)?saskaita(?:\s*-?\s*faktura)?|rekins|arve|τιμολογιο|αποδειξη|фактура|"
    # Turkey's electronic invoices ("e-Fatura", "e-Arşiv Fatura"), Russia's "Счёт-фактура".
    r"e\s*-?\s*(?:arsiv\s*)?fatura|счет(?:\s*-?\s*фактура)?)" + _END
)

TAX_ID = re.compile(
    r"(?:\b(?:vat|tva|btw|ust|mwst|uid|iva|nif|cif|siret|siren|gst|gstin|pan|tin|ein|abn|"
    r"cuit|cuil|ruc|rfc|nit|cnpj|cpf|nip|regon|ico|dic|mva)\b|"
    r"steuer-?nr|steuernummer|ust-?id|handelsregister|hrb|iban|bic\b|"
    r"geschaftsfuhr|registergericht|amtsgericht|kvk|rpr|rcs|p\.iva|partita|"
    r"org\.?\s*-?\s*nr|organisa(?:sjons|tions)\s*-?\s*n(?:umme)?r|foretaksregister|cvr\b|nipc|"
    # Romanian "CUI", "Cod fiscal", "Nr. Reg. Com.", "Identificator(ul) TVA"; Slovak "IČ
    # DPH"; Hungarian "Adószám"; Croatian "OIB"; Slovene "Davčna številka"; Lithuanian
    # "PVM kodas"; Latvian "PVN reģ. nr."; Estonian "KMKR", "Registrikood"; Finnish
    # "Y-tunnus"; Turkish "VKN", "Vergi dairesi"; Greek "ΑΦΜ", "ΔΟΥ", "ΓΕΜΗ"; Bulgarian
    # "ЕИК", "Булстат", "ИН по ДДС".
    r"\b(?:cui|oib|vkn|tckn|kmkr|αφμ|δου|γεμη|еик|булстат)\b|cod\s*fiscal|"
    r"nr\.?\s*reg\.?\s*com|identificator\w*\s*(?:tva|fiscal)|ic\s*dph|adoszam|"
    r"davcna\s*stevilka|pvm\s*(?:moketojo\s*)?kodas|pvn\s*reg|registrikood|y\s*-?\s*tunnus|"
    r"vergi\s*(?:dairesi|no|numarasi|kimlik)|ин\s*по\s*ддс|α\.φ\.μ|δ\.ο\.υ|"
    # Russia's "ИНН", "КПП", "ОГРН"; Ukraine's "ЄДРПОУ", "ІПН".
    r"\b(?:инн|кпп|огрн|єдрпоу|іпн)\b)",
)
SALUTATION = re.compile(
    r"^(?:herrn?|frau|mr\.?|mrs\.?|ms\.?|mme\.?|m\.|mevr\.?|dhr\.?|sr\.?|sra\.?)$"
)


def compile_labels(table: dict[str, list[str]]) -> list[tuple[str, re.Pattern[str]]]:
    """Each kind's labels as one pattern that ends where a word does."""
    return [(kind, re.compile(r"(?:" + "|".join(p) + r")" + _END)) for kind, p in table.items()]


_FIELDS = compile_labels(FIELD_LABELS)
_SUMS = compile_labels(SUM_LABELS)
_PARTIES = compile_labels(PARTY_HEADINGS)
# Alternatives joined by slashes are one label: "Nome / Razão social", "Name / Firma".
_NAME_WORD = r"(?:" + "|".join(NAME_LABELS) + r")" + _END
_NAME = re.compile(_NAME_WORD + r"(?:\s*/\s*" + _NAME_WORD + r")*")


def longest_label(
    patterns: list[tuple[str, re.Pattern[str]]], text: str, start: int = 0
) -> tuple[str, int] | None:
    folded = fold(text)
    best: tuple[str, int] | None = None
    for kind, pattern in patterns:
        match = pattern.match(folded, start)
        if match and (best is None or match.end() > best[1]):
            best = (kind, match.end())
    return best


@lru_cache(maxsize=65536)
def field_label(text: str) -> tuple[str, int] | None:
    """(kind, end) when `text` starts with a field label: number, issue, due, date..."""
    return longest_label(_FIELDS, text)


# What may stand before a tax label: "plus VAT 14%", "zzgl. 19 % USt.", "10% VAT:".
# So may the tax's level or kind, when an invoice adds several: "State Tax (6%)", "Federal
# Tax", "County sales tax", "Provincial tax".
_TAX_PREFIX = re.compile(
    r"(?=\S)(?:(?:plus|zzgl\.?|zuzuglich|\+)\s*)?(?:\d{1,2}(?:[.,]\d{1,2})?\s*%\s*)?"
    r"(?:(?:state|federal|county|city|local|provincial|municipal|regional)\s+)?"
)


@lru_cache(maxsize=65536)
def sum_label(text: str) -> tuple[str, int] | None:
    """(kind, end) when `text` starts with a label of a sum: net, tax, gross, due..."""
    found = longest_label(_SUMS, text)
    if found:
        return found
    prefix = _TAX_PREFIX.match(fold(text))
    if prefix and prefix.end():
        after = longest_label(_SUMS, text, prefix.end())
        if after and after[0] == "tax":
            return after
    return None


# What a party's heading may open with, in the six languages: "Informationen zum Käufer",
# "Angaben zum Leistungserbringer", "Details of the seller", "Information about the
# buyer", "Informations sur le client", "Gegevens van de koper", "Datos del comprador".
_HEADING_PREFIX = re.compile(
    r"(?:informationen|angaben|daten|details?|information|informations|informazioni|"
    r"informacion|informacao|gegevens|datos|dati|dados|donnees)\s+"
    r"(?:zum|zur|des|der|about|on|of|du|de|des|del|della|dello|do|da|van|sur|su)\s+"
    r"(?:the|le|la|l'|el|il|lo|o|a|de|het)?\s*"
)


@lru_cache(maxsize=65536)
def party_heading(text: str) -> tuple[str, int] | None:
    """(seller | buyer | other, end) when `text` starts with a party block's heading; not
    when a longer field label starts it ("Customer No.: C-17" is a number's label)."""
    found = longest_label(_PARTIES, text)
    if found is None:
        prefix = _HEADING_PREFIX.match(fold(text))
        if prefix:
            found = longest_label(_PARTIES, text, prefix.end())
    field = field_label(text)
    if found and field and field[1] > found[1]:
        return None
    return found


@lru_cache(maxsize=65536)
def name_label(text: str) -> int | None:
    match = _NAME.match(fold(text))
    return match.end() if match else None
