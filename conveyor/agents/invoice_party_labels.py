"""The headings of an invoice's party blocks and the marks of a party's lines.

The headings of the seller's, the buyer's and the other blocks (a delivery's address), the
labels of a party's name, an addressee's "Attention:", a salutation and the words of tax
and register numbers, in English, German, French, Dutch, Spanish, Italian, Portuguese,
Polish, the Scandinavian languages (Norwegian, Danish, Swedish), Romanian, Czech, Slovak,
Hungarian, Croatian, Slovene, Bulgarian, Lithuanian, Latvian, Estonian, Finnish, Turkish,
Catalan, Greek, Russian, Ukrainian and Japanese; matched as every label is (`invoice_labels`: folded
text, the longest label of any kind wins).
"""

# Greek and Cyrillic letters are the words' own, not look-alikes of Latin ones.
# ruff: noqa: RUF001, RUF003

from __future__ import annotations

import re
from functools import lru_cache

from conveyor.agents.invoice_labels import (
    WORD_END,
    compile_labels,
    field_label,
    fold,
    ja,
    longest_label,
)

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
        # Japanese "請求元", "発行元", "発行者", "販売元", "差出人".
        ja(r"請求元|発行元|発行者|販売元|差出人"),
        # Chinese "销售方", "銷售方", "卖方", "賣方", "供应商", "供應商", "销货单位".
        r"[销銷]\s?售\s?方|[卖賣]\s?方|供\s?[应應]\s?商|[销銷][货貨][单單]位",
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
        # Japanese "(ご)請求先", "宛先", "宛名".
        ja(r"(?:ご|御)?請求先|宛先|宛名"),
        # Chinese "购买方", "購買方", "买方", "買方", "客户", "客戶", "购货单位".
        r"[购購]\s?[买買]\s?方|[买買]\s?方|客\s?[户戶]|[购購][货貨][单單]位",
    ],
    "other": [
        r"ship\s*to",
        # Japanese "納品先", "送付先", "お届け先", "配送先".
        ja(r"納品先|送付先|お届け先|配送先"),
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
    # Chinese "名称", "名稱" (with its colon: it also heads a column of items' names).
    r"名\s?[称稱](?=\s*:)",
    r"име",
]

# "Attention: John Doe" in a buyer's block: the person it is addressed to, its name when
# the block has no name line of its own (it opens with the street).
ATTENTION = re.compile(
    r"^(?:attention|attn\.?|z\.?\s*h(?:d|anden)\.?|a\s*l'?\s*attention\s*(?:de)?|"
    r"t\.?\s*a\.?\s*v\.?|a\s*la\s*atencion\s*de|atencion|all'?\s*attenzione\s*(?:di)?)\s*:\s*"
)

# China's taxpayer number "纳税人识别号" (the unified social credit code, "统一社会信用代码"),
# Taiwan's "統一編號": with TAX_ID's other words, and before the id itself
# (invoice_parties reads the id behind it).
CHINESE_TAX_ID_WORD = (
    r"[纳納][税稅]人\s?[识識][别別][号號]|[统統]一社[会會]信用代[码碼]|[统統]一[编編][号號]"
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
    r"\b(?:инн|кпп|огрн|єдрпоу|іпн)\b|"
    # Japan's qualified-invoice registration number, "(適格請求書発行事業者)登録番号" (T and
    # 13 digits), and its corporate number, "法人番号".
    r"(?:適格請求書発行事業者\s*)?登録番号|法人番号|" + CHINESE_TAX_ID_WORD + r")",
)
# A Japanese addressee's honorific after its name: "株式会社山田商事 御中" (a company),
# "山田 太郎 様" (a person), "殿". The name before it is the buyer's; "お客様" (the
# customer), "皆様" (everyone) and "(経理部) ご担当者様" (whoever deals with it) name no one.
HONORIFIC = re.compile(r"^(?:御中|様|殿)$")
# "経理部 ご担当者様": the buyer's person in charge, under the buyer's name.
IN_CHARGE = re.compile(r"^(?:\S+\s+)?(?:ご|御)?担当(?:者)?\s*(?:様|殿)$")
ADDRESSEE = re.compile(
    r"^(?!お客様|皆様|各位)(?P<name>\S*[^\W\d_]\S*(?:\s+\S+)*?)(?<!担当者)(?<!担当)\s*"
    r"(?:御中|様|殿)\s*$"
)
SALUTATION = re.compile(
    r"^(?:herrn?|frau|mr\.?|mrs\.?|ms\.?|mme\.?|m\.|mevr\.?|dhr\.?|sr\.?|sra\.?)$"
)


_PARTIES = compile_labels(PARTY_HEADINGS)
# Alternatives joined by slashes are one label: "Nome / Razão social", "Name / Firma".
_NAME_WORD = r"(?:" + "|".join(NAME_LABELS) + r")" + WORD_END
_NAME = re.compile(_NAME_WORD + r"(?:\s*/\s*" + _NAME_WORD + r")*")


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
