"""Randomised invoice layouts in six languages: which general mechanism of the offline
invoice reader fails, by field and by layout habit.

    python benchmarks/fresh/probe.py [N [START [FIELD|all]]]   # N layouts from seed START

Not a corpus and not real documents: each seed draws one invoice (reportlab) from habits
picked at random (labels beside, after or above their values; the seller as a letterhead,
a block on the right or a footer line; the buyer under a heading, behind a label or in an
envelope window; tables with or without a position, a VAT column, second description
lines, whole prices; sums with colons, a currency column; six languages' labels, month
names and number formats). Written from general invoice habits, not from any document of
the corpora, so that a rule it teaches is a rule about a mechanism: its failures may be
looked at, unlike the held-out sets'. FIELD prints that field's misses.
"""

from __future__ import annotations

import datetime
import io
import json
import random
import sys
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE.parent))

from realdocs import expected, flatten, right  # noqa: E402
from reportlab.pdfgen import canvas  # noqa: E402

from conveyor.agents.offline import extract_offline  # noqa: E402
from conveyor.documents.text import extract_text  # noqa: E402

MONTHS = {
    "en": "January February March April May June July August September October November December",
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "nl": "januari februari maart april mei juni juli augustus september oktober november december",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre "
    "diciembre",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre "
    "dicembre",
}
L = {
    "en": dict(
        title=["INVOICE", "Invoice", "Tax Invoice"],
        number=["Invoice No.", "Invoice Number", "Invoice #", "Number"],
        date=["Invoice Date", "Date", "Date of issue", "Issue date"],
        due=["Due Date", "Payment due", "Due"],
        buyer=["Bill To", "Billed To", "Invoice To", "Customer", "Bill to:"],
        cols=[
            ["Description", "Qty", "Unit Price", "Amount"],
            ["Item", "Quantity", "Rate", "Total"],
        ],
        net=["Subtotal", "Net total", "Total excl. VAT"],
        tax=["VAT {r}%", "Tax ({r}%)", "Sales Tax"],
        gross=["Total", "Total Due", "Grand Total", "Amount Due"],
        legal=["Ltd", "Inc.", "LLC"],
        vat="VAT No.",
        cur=["GBP", "USD"],
        items=[
            "Consulting services",
            "Website design",
            "Hosting (annual)",
            "Support hours",
            "Travel expenses",
        ],
    ),
    "de": dict(
        title=["RECHNUNG", "Rechnung"],
        number=["Rechnungsnummer", "Rechnungs-Nr.", "Rechnung Nr.", "Nr."],
        date=["Rechnungsdatum", "Datum", "Ausstellungsdatum"],
        due=["Fällig am", "Zahlbar bis", "Fälligkeitsdatum"],
        buyer=["Rechnungsempfänger", "Kunde", "An"],
        cols=[
            ["Beschreibung", "Menge", "Einzelpreis", "Gesamtpreis"],
            ["Bezeichnung", "Anzahl", "Preis", "Betrag"],
        ],
        net=["Nettobetrag", "Zwischensumme", "Summe netto"],
        tax=["MwSt. {r} %", "USt. {r}%", "zzgl. {r}% MwSt."],
        gross=["Gesamtbetrag", "Rechnungsbetrag", "Gesamtsumme", "Bruttobetrag"],
        legal=["GmbH", "AG", "KG"],
        vat="USt-IdNr.",
        cur=["EUR"],
        items=["Beratung", "Webdesign", "Wartungsvertrag", "Montagearbeiten", "Fahrtkosten"],
    ),
    "fr": dict(
        title=["FACTURE", "Facture"],
        number=["Facture N°", "Numéro de facture", "N° de facture", "Réf. facture"],
        date=["Date de facture", "Date d'émission", "Date", "Date de facturation"],
        due=["Date d'échéance", "Échéance", "À payer avant le"],
        buyer=["Facturé à", "Client", "Destinataire", "Adressé à"],
        cols=[
            ["Désignation", "Qté", "Prix unitaire HT", "Montant HT"],
            ["Description", "Quantité", "P.U.", "Total HT"],
        ],
        net=["Total HT", "Montant HT", "Sous-total"],
        tax=["TVA {r} %", "TVA ({r}%)", "Montant TVA"],
        gross=["Total TTC", "Montant TTC", "Net à payer"],
        legal=["SARL", "SAS", "SA"],
        vat="N° TVA",
        cur=["EUR"],
        items=[
            "Prestation de conseil",
            "Création du site",
            "Hébergement annuel",
            "Maintenance",
            "Frais de déplacement",
        ],
    ),
    "nl": dict(
        title=["FACTUUR", "Factuur"],
        number=["Factuurnummer", "Factuurnr.", "Nummer"],
        date=["Factuurdatum", "Datum"],
        due=["Vervaldatum", "Te betalen voor"],
        buyer=["Factuur aan", "Klant", "Aan"],
        cols=[
            ["Omschrijving", "Aantal", "Prijs", "Bedrag"],
            ["Omschrijving", "Aantal", "Stukprijs", "Totaal"],
        ],
        net=["Subtotaal", "Totaal excl. BTW"],
        tax=["BTW {r}%", "BTW ({r}%)"],
        gross=["Totaal", "Totaal incl. BTW", "Te betalen"],
        legal=["B.V.", "N.V."],
        vat="BTW-nr.",
        cur=["EUR"],
        items=["Advieswerk", "Ontwerp website", "Hosting per jaar", "Onderhoud", "Reiskosten"],
    ),
    "es": dict(
        title=["FACTURA", "Factura"],
        number=["Factura N.º", "Número de factura", "Nº Factura", "Factura nº"],
        date=["Fecha", "Fecha de emisión", "Fecha factura"],
        due=["Fecha de vencimiento", "Vencimiento"],
        buyer=["Facturar a", "Cliente", "Datos del cliente"],
        cols=[
            ["Descripción", "Cantidad", "Precio unitario", "Importe"],
            ["Concepto", "Uds.", "Precio", "Total"],
        ],
        net=["Base imponible", "Subtotal"],
        tax=["IVA {r}%", "IVA ({r} %)"],
        gross=["Total", "Total factura", "Importe total"],
        legal=["S.L.", "S.A."],
        vat="NIF",
        cur=["EUR"],
        items=[
            "Servicios de consultoría",
            "Diseño web",
            "Alojamiento anual",
            "Mantenimiento",
            "Gastos de viaje",
        ],
    ),
    "it": dict(
        title=["FATTURA", "Fattura"],
        number=["Fattura n.", "Numero fattura", "N. fattura"],
        date=["Data", "Data fattura", "Data emissione"],
        due=["Scadenza", "Data scadenza"],
        buyer=["Destinatario", "Cliente", "Spett.le"],
        cols=[
            ["Descrizione", "Quantità", "Prezzo unitario", "Importo"],
            ["Descrizione", "Q.tà", "Prezzo", "Totale"],
        ],
        net=["Imponibile", "Totale imponibile"],
        tax=["IVA {r}%", "IVA ({r}%)"],
        gross=["Totale", "Totale documento", "Totale fattura"],
        legal=["S.r.l.", "S.p.A."],
        vat="P.IVA",
        cur=["EUR"],
        items=[
            "Consulenza",
            "Progettazione sito",
            "Hosting annuale",
            "Manutenzione",
            "Spese di trasferta",
        ],
    ),
}
RATES = {
    "en": [20, 10],
    "de": [19, 7],
    "fr": [20, 10],
    "nl": [21, 9],
    "es": [21, 10],
    "it": [22, 10],
}
STREETS = {
    "en": "{n} High Street",
    "de": "{s}straße {n}",
    "fr": "{n} rue {s}",
    "nl": "{s}straat {n}",
    "es": "Calle {s} {n}",
    "it": "Via {s} {n}",
}
CITIES = {
    "en": "London SW1A 1AA",
    "de": "10115 Berlin",
    "fr": "75011 Paris",
    "nl": "1012 AB Amsterdam",
    "es": "28001 Madrid",
    "it": "20121 Milano",
}
NAMES = [
    "Nordlicht",
    "Solaris",
    "Bergmann",
    "Rivoli",
    "Delta",
    "Marina",
    "Castello",
    "Vanguard",
    "Lumen",
    "Orbis",
    "Kestrel",
    "Albatros",
]


def money(value: Decimal, style: str) -> str:
    s = f"{value:,.2f}"
    if style == "en":
        return s
    if style == "de":
        return s.replace(",", "X").replace(".", ",").replace("X", ".")
    if style == "fr":
        return s.replace(",", " ").replace(".", ",")
    return s.replace(",", "'")


def date_text(d: datetime.date, lang: str, rng: random.Random) -> str:
    month = MONTHS[lang].split()[d.month - 1]
    options = {
        "en": [
            d.strftime("%d/%m/%Y"),
            f"{month} {d.day}, {d.year}",
            f"{d.day} {month} {d.year}",
            d.isoformat(),
        ],
        "de": [d.strftime("%d.%m.%Y"), f"{d.day}. {month} {d.year}"],
        "fr": [d.strftime("%d/%m/%Y"), f"{d.day} {month} {d.year}"],
        "nl": [d.strftime("%d-%m-%Y"), f"{d.day} {month} {d.year}"],
        "es": [d.strftime("%d/%m/%Y"), f"{d.day} de {month} de {d.year}"],
        "it": [d.strftime("%d/%m/%Y"), f"{d.day} {month} {d.year}"],
    }[lang]
    return rng.choice(options)


EXTRA = True
DISTRACTORS = {
    "en": ("Customer No.", "Delivery date"),
    "de": ("Kundennummer", "Lieferdatum"),
    "fr": ("N° client", "Date de livraison"),
    "nl": ("Klantnummer", "Leverdatum"),
    "es": ("Nº cliente", "Fecha de entrega"),
    "it": ("Codice cliente", "Data consegna"),
}
WEEKDAYS = {
    "en": "Monday Tuesday Wednesday Thursday Friday Saturday Sunday",
    "de": "Montag Dienstag Mittwoch Donnerstag Freitag Samstag Sonntag",
    "fr": "lundi mardi mercredi jeudi vendredi samedi dimanche",
    "nl": "maandag dinsdag woensdag donderdag vrijdag zaterdag zondag",
    "es": "lunes martes miércoles jueves viernes sábado domingo",
    "it": "lunedì martedì mercoledì giovedì venerdì sabato domenica",
}
NO_TAX = {
    "en": "VAT not applicable: small business exemption.",
    "de": "Gemäß § 19 UStG wird keine Umsatzsteuer berechnet.",
    "fr": "TVA non applicable, art. 293 B du CGI",
    "nl": "Vrijgesteld van BTW op grond van artikel 25 Wet OB.",
    "es": "Operación exenta de IVA según el artículo 20 de la Ley 37/1992.",
    "it": "Operazione esente IVA ai sensi dell'art. 10 DPR 633/72.",
}
PAGE2 = {
    "en": ("Page 1 of 2", "Page 2 of 2"),
    "de": ("Seite 1 von 2", "Seite 2 von 2"),
    "fr": ("Page 1 sur 2", "Page 2 sur 2"),
    "nl": ("Pagina 1 van 2", "Pagina 2 van 2"),
    "es": ("Página 1 de 2", "Página 2 de 2"),
    "it": ("Pagina 1 di 2", "Pagina 2 di 2"),
}
PAGE = {
    "en": "Page 1 of 1",
    "de": "Seite 1 von 1",
    "fr": "Page 1 sur 1",
    "nl": "Pagina 1 van 1",
    "es": "Página 1 de 1",
    "it": "Pagina 1 di 1",
}


def alt_date(d: datetime.date, lang: str, rng: random.Random) -> str:
    """Less usual spellings: year first with slashes, no leading zeros, short months."""
    month = MONTHS[lang].split()[d.month - 1]
    return rng.choice(
        [
            f"{d.year}/{d.month:02d}/{d.day:02d}",
            f"{d.day}.{d.month}.{d.year}" if lang == "de" else f"{d.day}/{d.month}/{d.year}",
            f"{d.day} {month[:3].capitalize()} {d.year}"
            if lang == "en"
            else f"{d.day} {month} {d.year}",
        ]
    )


def make(seed: int):
    rng = random.Random(seed)
    lang = rng.choice(list(L))
    v = L[lang]
    habit = {
        "meta": rng.choice(["same", "right", "below"]),
        "meta_at": rng.choice(["right", "left"]),
        "money": rng.choice(
            {
                "en": ["en"],
                "de": ["de"],
                "fr": ["fr", "de"],
                "nl": ["de"],
                "es": ["de"],
                "it": ["de"],
            }[lang]
            + (["ch"] if rng.random() < 0.1 else [])
        ),
        "cur": rng.choice(["symbol_before", "symbol_after", "code_after", "none_label"]),
        "cols": rng.randrange(len(v["cols"])),
        "buyer": rng.choice(["heading", "heading", "label"]),
        "sums": rng.choice(["right", "wide"]),
    }
    currency = rng.choice(v["cur"])
    symbol = {"EUR": "€", "GBP": "£", "USD": "$"}[currency]
    trade = rng.choice(["Consulting", "Design", "Systems", "Solutions", "Werk", "Studio"])
    seller = f"{rng.choice(NAMES)} {trade}"
    seller_legal = f"{seller} {rng.choice(v['legal'])}"
    kind = rng.choice(["Trading", "Holding", "Media", "Logistics", "Partners"])
    buyer = f"{rng.choice(NAMES)} {kind} {rng.choice(v['legal'])}"
    number = rng.choice(
        [
            f"{rng.randint(2020, 2026)}-{rng.randint(1, 999):03d}",
            f"RE{rng.randint(10000, 99999)}",
            f"F-{rng.randint(100, 9999)}",
            str(rng.randint(1000, 99999)),
        ]
    )
    issue = datetime.date(2025, 1, 1) + datetime.timedelta(days=rng.randint(0, 600))
    due = issue + datetime.timedelta(days=rng.choice([14, 30]))
    rate = rng.choice(RATES[lang])
    items = []
    for name in rng.sample(v["items"], rng.randint(1, 4)):
        qty = rng.choice([1, 2, 3, 5, 8, 10, 12, 40])
        unit = (
            Decimal(rng.choice([45, 60, 75, 90, 120, 150, 250, 1200, 1850]))
            + Decimal(rng.choice([0, 0, 50])) / 100
        )
        items.append((name, qty, unit, unit * qty))
    net = sum(i[3] for i in items)
    tax = (net * rate / 100).quantize(Decimal("0.01"))
    gross = net + tax

    def amt(x: Decimal) -> str:
        s = money(x, habit["money"])
        if habit.get("curly"):
            s = s.replace("'", "\u2019")  # the typographic apostrophe of Swiss German
        return {
            "symbol_before": f"{symbol}{s}" if currency != "EUR" else f"{s} €",
            "symbol_after": f"{s} {symbol}",
            "code_after": f"{s} {currency}",
            "none_label": s,
        }[habit["cur"]]

    habit["seller"] = rng.choice(["letterhead", "letterhead", "right_block", "footer"])
    if habit["seller"] == "right_block":
        habit["meta_at"] = "left"
    # More habits, drawn from a generator of their own so that the plain layouts (--plain)
    # stay as they were when the first rules were written from them.
    xr = random.Random(f"extra-{seed}")
    habit["buyer_right"] = EXTRA and xr.random() < 0.25 and habit["seller"] != "right_block"
    if habit["buyer_right"]:
        habit["meta_at"] = "right"
    habit["stack"] = EXTRA and xr.random() < 0.25 and not habit["buyer_right"]
    habit["distract"] = EXTRA and xr.random() < 0.4
    habit["pageno"] = EXTRA and xr.random() < 0.3
    habit["two_rates"] = EXTRA and xr.random() < 0.3 and len(items) >= 2
    habit["right_labels"] = EXTRA and xr.random() < 0.3
    habit["altdate"] = EXTRA and xr.random() < 0.25
    if EXTRA and xr.random() < 0.15:
        habit["money"] = "ch"
    habit["curly"] = EXTRA and habit["money"] == "ch" and xr.random() < 0.5
    habit["no_tax"] = EXTRA and xr.random() < 0.12
    habit["title_number"] = EXTRA and xr.random() < 0.2
    habit["weekday"] = EXTRA and xr.random() < 0.15
    habit["cur_header"] = EXTRA and habit["cur"] == "none_label" and xr.random() < 0.5
    if habit["no_tax"]:
        habit["two_rates"] = False
        tax, gross = Decimal("0.00"), net
    rates = [rate] * len(items)
    if habit["two_rates"]:
        other = next(r for r in RATES[lang] if r != rate)
        rates = [rate if n % 2 == 0 else other for n in range(len(items))]
        by_rate: dict[int, Decimal] = {}
        for (_, _, _, total), r in zip(items, rates, strict=True):
            by_rate[r] = by_rate.get(r, Decimal(0)) + total
        taxes = {r: (base * r / 100).quantize(Decimal("0.01")) for r, base in by_rate.items()}
        tax = sum(taxes.values(), Decimal(0))
        gross = net + tax
    if habit["buyer"] == "heading" and rng.random() < 0.3:
        habit["buyer"] = "window"
    habit["pos"] = rng.random() < 0.3
    habit["vatcol"] = rng.random() < 0.3
    habit["multiline"] = rng.random() < 0.3
    habit["colon"] = rng.random() < 0.4
    habit["whole"] = rng.random() < 0.3
    habit["curcol"] = habit["cur"] == "none_label" and rng.random() < 0.5
    street = STREETS[lang].format(
        n=rng.randint(1, 90), s=rng.choice(["Linden", "Haupt", "Mar", "Garibaldi"])
    )
    country = rng.choice(["DE", "FR", "NL", "ES", "IT", "GB"])
    vat_id = f"{v['vat']} {country}{rng.randint(100000000, 999999999)}"
    draw: list[tuple] = []  # (x, y, text, size, align)
    title = rng.choice(v["title"])
    if habit["title_number"]:
        title = f"{title} {number}"
    if habit["seller"] == "letterhead":
        draw += [
            (40, 50, seller_legal, 14, "l"),
            (40, 66, street, 9, "l"),
            (40, 78, CITIES[lang], 9, "l"),
            (40, 90, vat_id, 9, "l"),
        ]
        draw.append(
            (
                380 if habit["meta_at"] == "right" else 40,
                130 if habit["meta_at"] == "left" else 50,
                title,
                16,
                "l",
            )
        )
    elif habit["seller"] == "right_block":
        draw += [
            (360, 50, seller_legal, 12, "l"),
            (360, 64, street, 9, "l"),
            (360, 76, CITIES[lang], 9, "l"),
            (360, 88, vat_id, 9, "l"),
            (40, 60, title, 18, "l"),
        ]
    else:
        draw += [(40, 50, title, 18, "l")]
        draw += [
            (40, 800, seller_legal, 7, "l"),
            (190, 800, street, 7, "l"),
            (300, 800, CITIES[lang], 7, "l"),
            (420, 800, vat_id, 7, "l"),
        ]
    meta = [
        (rng.choice(v["number"]), number),
        (rng.choice(v["date"]), date_text(issue, lang, rng)),
        (rng.choice(v["due"]), date_text(due, lang, rng)),
    ]
    if habit["weekday"]:
        day = WEEKDAYS[lang].split()[issue.weekday()]
        meta[1] = (meta[1][0], f"{day}, {date_text(issue, lang, xr)}")
    if habit["altdate"]:
        meta[1] = (meta[1][0], alt_date(issue, lang, xr))
        meta[2] = (meta[2][0], alt_date(due, lang, xr))
    if habit["distract"]:
        customer_no, delivery = DISTRACTORS[lang]
        meta.insert(1, (customer_no, f"C-{xr.randint(100, 9999)}"))
        shipped = issue - datetime.timedelta(days=xr.randint(1, 9))
        meta.append((delivery, date_text(shipped, lang, xr)))
    if habit["title_number"]:
        meta.pop(0)
    if habit["cur"] == "none_label":
        meta.append(
            (
                {
                    "en": "Currency",
                    "de": "Währung",
                    "fr": "Devise",
                    "nl": "Valuta",
                    "es": "Moneda",
                    "it": "Valuta",
                }[lang],
                currency,
            )
        )
    mx, my = (380, 80) if habit["meta_at"] == "right" else (330, 150)
    for k, (label, value) in enumerate(meta):
        if habit["meta"] == "same":
            draw.append((mx, my + 14 * k, f"{label}: {value}", 9, "l"))
        elif habit["meta"] == "right":
            draw.append((mx, my + 14 * k, label + (":" if habit["colon"] else ""), 9, "l"))
            draw.append((mx + 100, my + 14 * k, value, 9, "l"))
        elif habit["stack"]:
            draw.append((mx, my + 24 * k, label, 9, "l"))
            draw.append((mx, my + 24 * k + 11, value, 9, "l"))
        else:
            draw.append((mx - 120 + 105 * k, my, label, 9, "l"))
            draw.append((mx - 120 + 105 * k, my + 12, value, 9, "l"))
    if habit["pageno"]:
        draw.append((480, 25, PAGE[lang], 7, "l"))
    bx = 330 if habit["buyer_right"] else 40
    by = 160 if habit["meta_at"] == "right" else 150
    bstreet = STREETS[lang].format(
        n=rng.randint(1, 90), s=rng.choice(["Rosen", "Kanal", "Roma", "Sol"])
    )
    if habit["buyer"] == "heading":
        draw.append((bx, by, rng.choice(v["buyer"]), 9, "l"))
        draw.append((bx, by + 13, buyer, 10, "l"))
    elif habit["buyer"] == "window":
        draw.append((bx, by - 12, f"{seller_legal} · {street} · {CITIES[lang]}", 6, "l"))
        draw.append((bx, by + 13, buyer, 10, "l"))
    else:
        draw.append(
            (
                40,
                by,
                f"{rng.choice(['Client', 'Customer', 'Kunde', 'Cliente', 'Klant'])}: {buyer}",
                9,
                "l",
            )
        )
    draw.append((bx, by + 25, bstreet, 9, "l"))
    draw.append((bx, by + 37, CITIES[lang], 9, "l"))
    ty = max([260.0] + [d[1] + 40 for d in draw if d[1] < 700])
    cols = list(v["cols"][habit["cols"]])
    if habit["cur_header"]:
        cols[-1] = f"{cols[-1]} ({currency})"
    dx = 40 + (30 if habit["pos"] else 0)
    xs = [dx, 300, 400, 540]
    if habit["vatcol"]:
        xs = [dx, 280, 360, 440, 540]
        vat = {"en": "VAT", "de": "MwSt.", "fr": "TVA", "nl": "BTW", "es": "IVA", "it": "IVA"}
        cols = [*cols[:3], vat[lang], *cols[3:]]
    if habit["pos"]:
        draw.append(
            (
                40,
                ty,
                {"en": "No.", "de": "Pos.", "fr": "N°", "nl": "Nr.", "es": "Nº", "it": "N."}[lang],
                9,
                "l",
            )
        )
    for x, head, al in zip(xs, cols, "l" + "r" * (len(cols) - 1), strict=True):
        draw.append((x, ty, head, 9, al))

    def price(x: Decimal) -> str:
        if habit["whole"] and x == x.to_integral_value():
            s = money(x, habit["money"])[:-3]
            return {
                "symbol_before": f"{symbol}{s}" if currency != "EUR" else f"{s} €",
                "symbol_after": f"{s} {symbol}",
                "code_after": f"{s} {currency}",
                "none_label": s,
            }[habit["cur"]]
        return amt(x)

    yy = ty + 18
    habit["two_pages"] = EXTRA and xr.random() < 0.2 and len(items) >= 2
    header = [d for d in draw if d[1] == ty]
    for n, (name, qty, unit, total) in enumerate(items):
        if habit["two_pages"] and n == (len(items) + 1) // 2:
            # the table goes on over the page: its header again at the top of page 2
            draw.append((480, 800, PAGE2[lang][0], 7, "l"))
            yy = 842 + 60
            draw += [(hx, yy, text, size, al) for hx, _, text, size, al in header]
            draw.append((480, 842 + 25, PAGE2[lang][1], 7, "l"))
            yy += 18
        row = [
            (dx, yy, name, 9, "l"),
            (xs[1], yy, str(qty), 9, "r"),
            (xs[2], yy, price(unit), 9, "r"),
        ]
        if habit["vatcol"]:
            row.append((xs[3], yy, f"{rates[n]} %", 9, "r"))
        row.append((xs[-1], yy, amt(total), 9, "r"))
        if habit["pos"]:
            row.append((40, yy, str(n + 1), 9, "l"))
        draw += row
        if habit["multiline"]:
            yy += 11
            draw.append(
                (
                    dx,
                    yy,
                    rng.choice(
                        [
                            "as agreed",
                            "laut Angebot",
                            "selon devis",
                            "volgens offerte",
                            "según presupuesto",
                            "come da preventivo",
                        ]
                    ),
                    7,
                    "l",
                )
            )
        yy += 14
    sy = yy + 12
    lx = 360 if habit["sums"] == "right" else 40
    tax_label = rng.choice(v["tax"])
    sums = [(rng.choice(v["net"]), net), (tax_label.format(r=rate), tax)]
    if habit["two_rates"]:
        sums = [sums[0]] + [(tax_label.format(r=r), t) for r, t in sorted(taxes.items())]
    sums.append((rng.choice(v["gross"]), gross))
    if habit["no_tax"]:
        sums = [sums[-1]]
        draw.append((40, sy + 40, NO_TAX[lang], 8, "l"))
    for k, (label, value) in enumerate(sums):
        text = amt(value)
        if habit["curcol"]:
            draw.append((560, sy + 14 * k, currency, 9, "l"))
        label = label + (":" if habit["colon"] else "")
        if habit["right_labels"]:
            draw.append((470, sy + 14 * k, label, 9, "r"))
        else:
            draw.append((lx, sy + 14 * k, label, 9, "l"))
        draw.append((540, sy + 14 * k, text, 9, "r"))
    truth = {
        "issuer": seller_legal,
        "customer": buyer,
        "invoice_number": number,
        "date": issue.isoformat(),
        "date_due": due.isoformat(),
        "currency": currency,
        "amount": str(gross),
        "amount_untaxed": str(net),
        "amount_tax": None if habit["no_tax"] else str(tax),
        "lines": [
            {"name": n, "qty": str(q), "price_unit": str(u), "price_subtotal": str(t)}
            for n, q, u, t in items
        ],
    }
    return lang, habit, draw, truth


def pdf(draw) -> bytes:
    out = io.BytesIO()
    page = canvas.Canvas(out, pagesize=(595, 842))
    # y past 842 is on the second page
    for number in range(1 + int(max(d[1] for d in draw) // 842)):
        for x, y, text, size, align in draw:
            if y // 842 == number:
                page.setFont("Helvetica", size)
                (page.drawString if align == "l" else page.drawRightString)(x, 842 - y % 842, text)
        page.showPage()
    page.save()
    return out.getvalue()


def main() -> None:
    global EXTRA
    if "--plain" in sys.argv:
        EXTRA = False
        sys.argv.remove("--plain")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    start = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    show = sys.argv[3] if len(sys.argv) > 3 else None
    per_field = defaultdict(Counter)
    per_habit = defaultdict(Counter)
    hi = hiw = 0
    for seed in range(start, start + n):
        lang, habit, draw, truth = make(seed)
        res = extract_offline(extract_text(pdf(draw)), "invoice")
        got = flatten(res.data)
        for name, want in expected(truth).items():
            ok = right(name, want, got.get(name))
            conf = res.fields.get(name, 0.0)
            hi += conf >= 0.9
            hiw += conf >= 0.9 and not ok
            per_field[name][ok] += 1
            per_field[f"{name}@{lang}"][ok] += 1
            for h, val in habit.items():
                per_habit[f"{name}|{h}={val}"][ok] += 1
            if not ok and show and show in (name, "all"):
                print(
                    seed,
                    lang,
                    habit,
                    name,
                    "want",
                    json.dumps(want, default=str)[:200],
                    "got",
                    json.dumps(got.get(name), default=str)[:200],
                )
    tot = sum(c[True] for k, c in per_field.items() if "@" not in k)
    alln = sum(sum(c.values()) for k, c in per_field.items() if "@" not in k)
    print(f"fields right {tot}/{alln} = {100 * tot / alln:.1f} %; >=0.9 {hi}, wrong {hiw}")
    for k in sorted(per_field):
        if "@" not in k:
            c = per_field[k]
            print(f"  {k:16} {c[True]}/{c[True] + c[False]}")
    worst = sorted(per_habit.items(), key=lambda kv: kv[1][True] / sum(kv[1].values()))[:25]
    for k, c in worst:
        print(f"  {k:50} {c[True]}/{c[True] + c[False]}")
    byl = sorted((k, c) for k, c in per_field.items() if "@" in k)
    bad = [(k, c) for k, c in byl if c[False]]
    print("  by language:", ", ".join(f"{k} {c[True]}/{c[True] + c[False]}" for k, c in bad))


if __name__ == "__main__":
    main()
