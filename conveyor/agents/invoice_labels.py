"""The words invoices label their fields with, and how every invoice label is matched.

Here: the labels of an invoice's fields (its number, its dates, and the numbers and dates
that are not the invoice's: an order's, a customer's, a delivery's) and its title, in
English, German, French, Dutch, Spanish, Italian, Portuguese, Polish, the Scandinavian
languages (Norwegian, Danish, Swedish), Romanian, Czech, Slovak, Hungarian, Croatian,
Slovene, Bulgarian, Lithuanian, Latvian, Estonian, Finnish, Turkish, Catalan, Greek,
Russian, Ukrainian and Japanese. The labels of sums are in `invoice_sum_labels`, the headings of the
parties' blocks and their marks in `invoice_party_labels`, an item table's column headers
in `invoice_columns`, legal forms in `legal_forms`.

Labels are matched on folded text (`fold`: lower case, accents dropped, one character
for one, so that a match's end is an index into the original) at the start of a cell,
Japanese ones too: its kana lose their voicing marks in the fold ("ご請求" is "こ請求"), and
`ja` folds a Japanese pattern the same way, so the patterns are written as printed;
and the longest label of any kind wins: "Totaal bedrag excl. BTW" is the net, not the
"Totaal" it begins with; "Gesamtbetrag der Zuschläge" is a charge, not "Gesamtbetrag".
"""

# Greek and Cyrillic letters are the words' own, not look-alikes of Latin ones.
# ruff: noqa: RUF001, RUF003

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from conveyor.agents.invoice_sum_labels import SUM_LABELS

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
WORD_END = r"(?![^\W\d_])"

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


def ja(*patterns: str) -> str:
    """Japanese patterns as `fold` leaves their words (a kana's voicing mark dropped:
    "ご" is "こ", "デ" is "テ"), written as printed. Their regex syntax is all lower case
    ASCII, which the fold keeps."""
    return "|".join(fold(p) for p in patterns)


# Japanese invoices (請求書) set a label and its value without a space, often with a
# full-width colon ("請求日：2024年4月1日"); the sheet reads full-width forms as ASCII and
# a label's word end lets a digit follow.
_JA_NUMBER = ja(
    r"(?:御|ご)?請求書?\s*(?:番号|no\.?|#)",
    r"伝票\s*(?:番号|no\.?)",
    r"(?:納品書兼)?請求書\s*no\.?",
)
_JA_ISSUE = ja(
    r"(?:御|ご)?請求(?:書)?\s*(?:発行)?(?:年月日|日付|日)",
    r"(?:請求書)?発行(?:年月日|日)",
    r"作成日",
)
_JA_DUE = ja(
    # "お支払期限", "お支払い期日", "お振込期限", "振込期日", "ご入金期限", "支払期限日".
    r"(?:お|御|ご)?(?:支払い?|支払|振込み?|振り込み|入金)\s*(?:期限|期日|予定日)(?:日)?",
    # "お支払日", "支払日": on an invoice, the day it is to be paid.
    r"(?:お|御)?支払い?日",
)

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
        _JA_NUMBER,
        # Chinese "发票号码", "發票號碼", "发票编号", "发票号".
        r"[发發]票\s*(?:[号號]\s*[码碼]|[编編]\s*[号號]|[号號])",
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
        # Chinese "发票代码" (a VAT invoice's batch code, printed beside its number).
        r"[发發]票\s*代\s*[码碼]",
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
        _JA_ISSUE,
        # Chinese "开票日期", "開票日期", "发票日期", "開立日期".
        r"(?:[开開]\s*票|[发發]\s*票|[开開]\s*立)\s*日\s*期",
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
        # Japanese "日付", "年月日".
        ja(r"日\s?付|年月日"),
        # Chinese "日期".
        r"日\s?期",
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
        _JA_DUE,
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
        # Japanese delivery, order, shipping and service dates: "納品日", "納期", "受注日",
        # "注文日", "発注日", "出荷日", "作業日".
        ja(r"納品日|納期|注文日|受注日|発注日|出荷日|作業日|検収日"),
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
        # Japanese registration (the qualified-invoice "登録番号"), order, customer,
        # delivery-note, account, corporate and telephone numbers.
        ja(
            r"(?:適格請求書発行事業者)?登録番号",
            r"(?:注文|発注|受注|顧客|お客様|得意先|納品書|口座|法人|電話|取引先)\s*(?:番号|no\.?|コード)",
        ),
    ],
}

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
    r"e\s*-?\s*(?:arsiv\s*)?fatura|счет(?:\s*-?\s*фактура)?|"
    # Japanese "請求書", "御請求書" (set letter-spaced too: "請 求 書"), "納品書兼請求書"
    # (a delivery note that is the invoice), "領収書" (a receipt). A bare "納品書" is a
    # delivery note: no invoice's title.
    + ja(r"(?:御|ご)?\s*請\s*求\s*書", r"納品書兼請求書", r"領\s*収\s*書")
    + r")"
    + WORD_END
)


def compile_labels(table: dict[str, list[str]]) -> list[tuple[str, re.Pattern[str]]]:
    """Each kind's labels as one pattern that ends where a word does."""
    return [(kind, re.compile(r"(?:" + "|".join(p) + r")" + WORD_END)) for kind, p in table.items()]


_FIELDS = compile_labels(FIELD_LABELS)
_SUMS = compile_labels(SUM_LABELS)


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
