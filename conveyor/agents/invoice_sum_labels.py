"""The words invoices label their sums with, and the notes that no VAT is charged.

The kinds of sum (net, items, tax, gross, amount due, charges, discounts, taxes withheld)
and the labels that are no sum (a payment, a rounding, a tax's base), in English, German,
French, Dutch, Spanish, Italian, Portuguese, Polish, the Scandinavian languages
(Norwegian, Danish, Swedish), Romanian, Czech, Slovak, Hungarian, Croatian, Slovene,
Bulgarian, Lithuanian, Latvian, Estonian, Finnish, Turkish, Catalan, Greek, Russian,
Ukrainian and Japanese. `invoice_labels.sum_label` matches them as every label is matched (folded
text, the longest label of any kind wins).
"""

# Greek and Cyrillic letters are the words' own, not look-alikes of Latin ones.
# ruff: noqa: RUF001, RUF003

from __future__ import annotations

import re

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
# A tax's word anywhere in a page's folded text, a whole word: "Total incl. VAT", "MwSt. 19 %".
TAX_WORD = re.compile(rf"(?<!\w){_TAX_WORD}(?!\w)")
# A tax's word before its total: "TVA total", "DPH celkem", "PDV ukupno", "KDV toplam".
_TAX_TOTAL = (
    _TAX_WORD + r"\s*(?:total[a]?|celkem|celkom|spolu|ukupno|skupaj|kokku|osszesen|yhteensa|"
    r"toplam|συνολο|общо)"
)


# Japanese sums, as `invoice_labels.fold` leaves them (a kana's voicing mark dropped: "ご"
# is "こ"; full-width brackets are ASCII): the tax "消費税(額)", "税額", "消費税等", and a
# sum's tax stated after it in brackets, "合計(税込)", "小計(税抜)".
# Two- and three-kanji labels are often set letter-spaced ("合　計", "小 計"): the sheet
# reads the ideographic space as a space.
_JA_TAX = r"(?:(?:\(\s*)?(?:内|うち)\s*)?(?:消\s?費\s?税(?:及び地方消費税)?(?:等)?(?:額)?|税\s?額)"
_JA_WITHOUT = r"(?:\(\s*税抜き?\s*\)|税抜き?|外税)"
_JA_WITH = r"(?:\(\s*税込み?\s*\)|税込み?)"
_JA_TOTAL = r"(?:総?合\s?計(?:金額|額)?|総\s?額)"


def _with_tax(word: str) -> str:
    # In parentheses only after the sum's word: "(ekskl. mva)" alone qualifies a column.
    return rf"(?:{_SUM_WORD}\s*\(?\s*{word}\s*{_TAX_WORD}\s*\)?|{word}\s*{_TAX_WORD})"


SUM_LABELS: dict[str, list[str]] = {
    "net": [
        _with_tax(_WITHOUT),
        # Japanese "小計", "税抜合計", "税抜金額", "合計(税抜)", "課税対象額".
        rf"小\s?計(?:\s*{_JA_WITHOUT})?|{_JA_WITHOUT}\s*(?:{_JA_TOTAL}|金額|価格|額|計)|"
        rf"{_JA_TOTAL}\s*{_JA_WITHOUT}|課税対象額",
        # Chinese "小计", "小計".
        r"小\s?[计計]",
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
        # Brazil's taxes, each by its name, with the article of its gender or none: "Valor
        # do ICMS", "Valor do ICMS ST", "Valor do IPI", "Valor da COFINS", "Valor total IPI".
        r"valor\s*(?:total\s*)?(?:d[ao]s?\s*)?(?:icms(?:\s*st)?|ipi|issqn|iss|pis|cofins)",
        # A sum's word straight before the tax's is the tax's total in every language, as
        # "Total VAT" is: "Summe Umsatzsteuer", "Summe MwSt.", "Totale IVA", "Somme TVA".
        rf"{_SUM_WORD}\s*(?:der\s*|de\s*(?:la\s*)?|del\s*)?{_TAX_WORD}",
        r"(?:total\s*)?(?:sales\s*)?tax(?:es)?(?:\s*(?:total|amount))?",
        r"vat(?:\s*(?:total|amount))?",
        # Japanese "消費税", "消費税額", "税額", "内消費税" (the tax a sum includes),
        # "消費税(10%)", "10%対象消費税".
        rf"(?:\d{{1,2}}\s*%\s*対象\s*)?{_JA_TAX}(?:\s*合計)?",
        # Chinese "税额", "稅額", "增值税额" (税 and 稅 are one character's two forms).
        r"(?:增值)?[税稅]\s?[额額]",
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
        # Japanese "合計", "合計金額", "総合計", "総額", "税込合計", "合計(税込)", "税込金額".
        rf"{_JA_TOTAL}(?:\s*{_JA_WITH})?|{_JA_WITH}\s*(?:{_JA_TOTAL}|金額|価格|額|計)",
        # Chinese "合计", "总计", "總計", "价税合计(小写)" (the total in figures; "(大写)" is
        # the same in words), "总金额".
        r"(?:[价價][税稅]\s?)?合\s?[计計](?:\s*\(\s*小\s?[写寫]\s*\))?|[总總]\s?[计計]|"
        r"[总總]\s?金\s?[额額]|\(\s*小\s?[写寫]\s*\)",
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
        r"valor\s*d[ao]\s*(?:nota|nf\S*|fatura|documento)",
        r"celkem(?:\s*k\s*uhrade)?",
        r"razem(?:\s*brutto)?",
        r"(?:wartosc|kwota)?\s*brutto",
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
        # Japanese "ご請求金額", "御請求額", "請求金額", "今回ご請求額", "お支払金額", "差引請求額".
        r"(?:今回\s*)?(?:こ|御)?請求(?:金)?額(?:\s*合計)?(?:\s*\(\s*税込み?\s*\))?|"
        r"(?:お|御)?支払い?(?:金)?額|差引\s*(?:こ)?請求(?:金)?額",
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
        # Brazil's estimate of the taxes inside the prices, by law printed on every sale:
        # "Valor total trib.", "Valor aproximado dos tributos".
        r"valor\s*(?:total\s*)?(?:aproximado\s*)?(?:d[ao]s\s*)?trib(?:utos)?\.?",
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
        # A Japanese tax rate's base ("10%対象", "8%対象(軽減税率)", "対象額"), what was
        # paid ("前回ご請求額", "ご入金額", "入金済"), a carried balance ("繰越金額"), a
        # rounding ("端数調整").
        r"(?:\d{1,2}\s*%\s*)?対象(?:額|金額)?(?:\s*\(?\s*軽減税率\s*\)?)?|軽減税率対象",
        r"前回\s*(?:こ|御)?請求(?:金)?額|(?:こ|御)?入金(?:額|済)|繰越(?:金)?額|端数調整",
    ],
}

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
    # A Spanish-speaking country's exempt invoice by its name: "factura (no afecta o) exenta".
    r"factura\s+(?:no\s+afecta\s+o\s+)?exenta|"
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
