"""The fictional world the sample documents come from: vendors and customers in ten
countries, the goods they sell, and each country's habits (currency, how it writes
amounts and dates, what its sales tax is called and what it costs)."""

from __future__ import annotations

from dataclasses import dataclass

from conveyor.testing.samples.formats import MoneyStyle, eu_money, us_money


@dataclass(frozen=True)
class Place:
    currency: str
    money: tuple[MoneyStyle, ...]
    dates: tuple[str, ...]  # DATE_STYLES keys that place uses
    tax_names: tuple[str, ...]
    tax_rates: tuple[str, ...]
    letter: bool = False  # US Letter paper rather than A4


PLACES = {
    "US": Place(
        "USD",
        (us_money("$"), us_money("USD ")),
        ("us", "long_us", "short_us"),
        ("Sales tax", "Tax"),
        ("0", "6", "7.25", "8.25", "8.875"),
        letter=True,
    ),
    "DE": Place(
        "EUR",
        (eu_money("€"), eu_money("EUR"), us_money("€")),
        ("dot", "iso"),
        ("VAT", "MwSt."),
        ("19", "7"),
    ),
    "UK": Place(
        "GBP", (us_money("£"), us_money("GBP ")), ("dmy", "long_eu", "short_eu"), ("VAT",), ("20",)
    ),
    "CA": Place(
        "CAD",
        (us_money("CA$"), us_money("CAD ")),
        ("iso", "long_us"),
        ("GST", "HST"),
        ("5", "13"),
        letter=True,
    ),
    "AU": Place("AUD", (us_money("A$"), us_money("AUD ")), ("dmy", "long_eu"), ("GST",), ("10",)),
    "CH": Place(
        "CHF",
        (MoneyStyle("'", ".", "CHF"), MoneyStyle("'", ".", "CHF", sign_after=True)),
        ("dot",),
        ("MWST", "VAT"),
        ("8.1",),
    ),
    "JP": Place(
        "JPY",
        (MoneyStyle(",", ".", "¥", decimals=0), MoneyStyle(",", ".", "JPY", decimals=0)),
        ("iso",),
        ("Consumption tax",),
        ("10",),
    ),
    "FR": Place(
        "EUR",
        (MoneyStyle(" ", ",", "€", sign_after=True), eu_money("EUR")),
        ("dmy", "long_eu"),
        ("TVA", "VAT"),
        ("20", "10"),
    ),
    "NL": Place(
        "EUR",
        (eu_money("€", after=False), eu_money("EUR")),
        ("dmy", "iso"),
        ("BTW", "VAT"),
        ("21",),
    ),
}


@dataclass(frozen=True)
class Company:
    name: str
    lines: tuple[str, ...]
    country: str
    tax_label: str = ""
    tax_id: str = ""


VENDORS = (
    Company(
        "Northwind Traders Inc.",
        ("1200 Market Street, Suite 400", "San Francisco, CA 94103", "United States"),
        "US",
        "EIN",
        "94-3125567",
    ),
    Company(
        "Kettle & Forge LLC",
        ("88 Foundry Lane", "Pittsburgh, PA 15222"),
        "US",
        "Tax ID",
        "25-1876543",
    ),
    Company(
        "Bergmann & Söhne GmbH",
        ("Industriestraße 14", "70565 Stuttgart", "Germany"),
        "DE",
        "USt-IdNr.",
        "DE284619073",
    ),
    Company(
        "Thames Valley Supplies Ltd",
        ("Unit 7, Riverside Park", "Reading RG1 8BB", "United Kingdom"),
        "UK",
        "VAT No.",
        "GB 214 5567 81",
    ),
    Company(
        "Maple Leaf Logistics Corp.",
        ("455 Front Street West", "Toronto, ON M5V 2W1", "Canada"),
        "CA",
        "GST/HST No.",
        "81234 5678 RT0001",
    ),
    Company(
        "Southern Cross Software Pty Ltd",
        ("Level 12, 60 Margaret Street", "Sydney NSW 2000", "Australia"),
        "AU",
        "ABN",
        "51 824 753 556",
    ),
    Company(
        "Helvetia Präzision AG",
        ("Bahnhofstrasse 21", "8001 Zürich", "Switzerland"),
        "CH",
        "MWST-Nr.",
        "CHE-116.281.710",
    ),
    Company(
        "Sakura Components K.K.",
        ("3-7-1 Nishi-Shinjuku", "Shinjuku-ku, Tokyo 163-1030", "Japan"),
        "JP",
        "Registration No.",
        "T8010401012345",
    ),
    Company(
        "Lumière Conseil SARL",
        ("27 rue de la République", "69002 Lyon", "France"),
        "FR",
        "TVA",
        "FR40 483 247 862",
    ),
    Company(
        "Van Dijk Installaties B.V.",
        ("Keizersgracht 312", "1016 EZ Amsterdam", "Netherlands"),
        "NL",
        "BTW-nr",
        "NL853746333B01",
    ),
)

CUSTOMERS = (
    Company("Globex Corporation", ("742 Evergreen Terrace", "Springfield, OR 97403"), "US"),
    Company("Initech Ltd", ("4 Bridge Road", "Leeds LS1 4AP", "United Kingdom"), "UK"),
    Company("Umbrella Research GmbH", ("Am Sandtorkai 50", "20457 Hamburg"), "DE"),
    Company("Stark Freight Co.", ("1 Harbour Drive", "Halifax, NS B3J 1A1", "Canada"), "CA"),
    Company("Wayne Botanical SAS", ("12 avenue Jean Jaurès", "31000 Toulouse"), "FR"),
    Company("Blue Gum Retail Pty Ltd", ("221 Queen Street", "Brisbane QLD 4000"), "AU"),
    Company("Tanaka Trading Co., Ltd.", ("2-4-1 Marunouchi", "Chiyoda-ku, Tokyo 100-0005"), "JP"),
    Company("Hooli Europe B.V.", ("Herengracht 500", "1017 CB Amsterdam"), "NL"),
    Company("Cyberdyne Systems", ("18144 El Camino Real", "Sunnyvale, CA 94087"), "US"),
    Company("Alpenblick Hotels AG", ("Seestrasse 8", "6004 Luzern"), "CH"),
)

# (description, price range, whole quantities?) — some descriptions hold numbers on purpose.
CATALOGUE: tuple[tuple[str, tuple[int, int], bool], ...] = (
    ("Consulting services", (90, 220), False),
    ("On-site installation", (400, 1800), True),
    ("Annual support plan", (900, 4800), True),
    ("Steel bracket M8 (pack of 50)", (12, 60), True),
    ("USB-C cable 2 m", (6, 25), True),
    ("Copy paper A4 80 g/m2, 5 reams", (18, 40), True),
    ("Cloud hosting - monthly", (150, 1200), True),
    ("Software licence, 12 months", (200, 2400), True),
    ("Shipping and handling", (10, 90), True),
    ("Design workshop (half day)", (600, 1500), True),
    ("Replacement filter cartridge", (20, 75), True),
    ("Data migration", (80, 180), False),
    ("Training session for 10 people", (500, 2500), True),
    ("LED panel 60x60 cm", (35, 120), True),
    ("Translation, per page", (25, 45), True),
    ("Espresso beans 1 kg", (18, 32), True),
    ("Project management", (85, 160), False),
    ("Ergonomic office chair", (180, 650), True),
    ("Network switch 24-port", (210, 900), True),
    ("Maintenance visit", (120, 350), True),
)
