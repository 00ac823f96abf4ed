"""The words item tables head their columns with, and the lines that end a table, in the
languages of `invoice_labels` (English, German, French, Dutch, Spanish, Italian,
Portuguese, Polish, Czech, Slovak, Finnish, Norwegian, Danish, Swedish, Romanian,
Hungarian, Croatian, Slovene, Lithuanian, Latvian, Estonian, Turkish, Catalan, Greek,
Bulgarian, Japanese): the vocabulary of `invoice_table_header`, matched as
`invoice_labels` matches labels (on folded text, the longest label wins: "Unit price" is
one column, not "Unit" and "price")."""

# Greek and Cyrillic letters are the words' own, not look-alikes of Latin ones.
# ruff: noqa: RUF001, RUF003

from __future__ import annotations

import re
from functools import lru_cache

from conveyor.agents.invoice_labels import compile_labels, ja, longest_label

# Columns of an item table, by their headers.
COLUMN_LABELS: dict[str, list[str]] = {
    "pos": [
        r"pos(?:ition)?\.?",
        r"nr\.?",
        r"no\.?",
        r"#",
        r"lfd\.?",
        r"line",
        r"lp\.?",
        # Romanian "Nr. crt.", "Linia"; Croatian "R. br."; Turkish "Sıra No"; Greek "Α/Α".
        r"nr\.?\s*crt\.?|linia|r\.?\s*br\.?|rb\.?|sira(?:\s*no)?|α/α|№",
    ],
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
        # Romanian "Denumire(a produselor sau a serviciilor)", "Nume articol"; Czech and
        # Slovak "Popis", "Označení dodávky"; Hungarian "Megnevezés", "Termék"; Croatian and
        # Slovene "Naziv", "Opis", "Artikel"; Lithuanian "Pavadinimas"; Latvian
        # "Nosaukums"; Estonian "Nimetus", "Kirjeldus"; Finnish "Kuvaus", "Nimike"; Turkish
        # "Mal hizmet", "Açıklama", "Ürün"; Catalan "Descripció", "Concepte"; Greek
        # "Περιγραφή", "Αιτιολογία", "Είδος"; Bulgarian "Наименование", "Описание".
        r"denumire(?:a)?(?:\s*(?:produselor|produsului|bunurilor|serviciilor|articolului)"
        r"(?:\s*(?:sau|si)\s*(?:a\s*)?serviciilor)?)?|nume\s*articol\w*|articol|produs",
        r"popis|oznaceni(?:\s*dodavky)?|nazov|nazev",
        r"megnevezes|termek(?:\s*/\s*szolgaltatas)?|szolgaltatas",
        r"naziv(?:\s*(?:proizvoda|usluge|artikla|robe))?|opis",
        r"pavadinimas|prekes|nosaukums|nimetus|kirjeldus|kuvaus|nimike",
        r"mal\s*(?:/\s*)?hizmet|aciklama|urun(?:\s*adi)?|hizmet",
        r"descripcio|concepte",
        r"περιγραφη|αιτιολογια|ειδοσ",
        r"наименование(?:\s*на\s*(?:стоката|услугата))?|описание|стока|услуга",
        # Japanese "品名", "品目", "商品名", "内容", "摘要", "項目", "明細", "品番・品名".
        ja(r"(?:品番\s*[・/]?\s*)?品\s?名|品\s?目|商品名|内\s?容|摘\s?要|項\s?目|明\s?細"),
        # Chinese "项目名称", "項目名稱", "货物或应税劳务(、服务)名称", "商品名称".
        r"[项項]\s?目\s?名\s?[称稱]|[货貨]物或[应應][税稅][劳勞][务務](?:\s*[、,]\s*服[务務])?名[称稱]|"
        r"商品名[称稱]",
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
        # Romanian "Cantitate", Czech "Množství", Slovak "Množstvo", Hungarian "Mennyiség",
        # Croatian and Slovene "Količina", Lithuanian "Kiekis", Latvian "Daudzums",
        # Estonian "Kogus", Finnish "Määrä", "Kpl", Turkish "Miktar", Catalan "Quantitat",
        # Greek "Ποσότητα", Bulgarian "Количество".
        r"cantitate(?:\s*facturata)?|mnozstvi|mnozstvo|mennyiseg|menny\.|kolicina|kol\.",
        r"kiekis|daudzums|kogus|kpl|miktar(?:i)?|quantitat",
        r"ποσοτητα|ποσ\.|количество|к-во|кол\.|кол\s*-\s*во|кількість",
        # Japanese "数量".
        ja(r"数\s?量"),
        # Chinese "數量" (the simplified "数量" is the Japanese word).
        r"數\s?量",
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
        # Romanian "Preț unitar (fără TVA)", "Preț net"; Czech "Jednotková cena", Slovak
        # "Jedn. cena"; Hungarian "Egységár"; Croatian "Cijena", "Jedinična cijena";
        # Slovene "Cena"; Lithuanian, Latvian "Kaina", "Cena"; Estonian "Hind", "Ühiku
        # hind"; Finnish "Hinta", "Yksikköhinta"; Turkish "Birim fiyat"; Catalan "Preu
        # (unitari)"; Greek "Τιμή (μονάδας)"; Bulgarian "Единична цена", "Ед. цена".
        r"pret(?:ul)?(?:\s*(?:unitar|net))*(?:\s*al\s*articolului)?(?:\s*\(?fara\s*tva\)?)?",
        # ("Cena" alone stays no column: a Polish header splits "Cena | netto" in two.)
        r"(?:jednotkova|jedn\.|jednotk\.)\s*cena|cena\s*(?:za\s*jednotku|jednotky|na\s*enoto)",
        r"egysegar|(?:netto\s*)?egyseg\s*ar",
        r"(?:jedinicna\s*)?cijena",
        r"kaina|(?:uhiku\s*)?hind|(?:yksikko)?hinta|birim\s*fiyat\w*|fiyat|preu(?:\s*unitari)?",
        r"τιμη(?:\s*(?:μοναδασ|μον\.))?",
        r"(?:единична|ед\.)\s*цена|цена",
        # Japanese "単価".
        ja(r"単\s?価"),
        # Chinese "单价", "單價".
        r"[单單]\s?[价價]",
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
        # Romanian "Valoare (netă)", Czech "Celkem", Slovak "Spolu", Hungarian "Nettó
        # érték", "Érték", "Összeg"; Croatian "Iznos", Slovene "Znesek", "Vrednost";
        # Lithuanian "Suma", Estonian "Summa"; Turkish "Tutar", "Mal hizmet tutarı";
        # Catalan "Import"; Greek "Αξία", "Ποσό"; Bulgarian "Стойност", "Сума".
        r"valoare(?:a)?(?:\s*(?:neta|totala|fara\s*tva))?",
        r"spolu|celkom|(?:netto\s*|brutto\s*)?ertek|osszeg|iznos|znesek|vrednost|suma",
        r"(?:mal\s*hizmet\s*)?tutar(?:i)?|import",
        r"αξια|ποσο|συνολο",
        r"стоиност|сума|сумма",
        # Japanese "金額".
        ja(r"金\s?額(?:\s*\(\s*税[込抜]\s*\))?"),
        # Chinese "金额".
        r"金\s?[额額]",
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
        # Romanian "Cota TVA", Czech "Sazba DPH", Slovak "Sadzba", Hungarian "ÁFA (%)",
        # "ÁFA kulcs"; Croatian "PDV %", Slovene "DDV %", "Stopnja"; Lithuanian "PVM %",
        # Latvian "PVN %"; Turkish "KDV oranı"; Greek "ΦΠΑ %"; Bulgarian "ДДС %".
        r"cota(?:\s*tva)?(?:\s*%)?|(?:sazba|sadzba)(?:\s*dph)?|dph\s*%?",
        r"afa(?:\s*(?:kulcs|%))?|(?:pdv|ddv|pvm|pvn)\s*%?|stop(?:a|nja)(?:\s*(?:pdv|ddv))?",
        r"kdv(?:\s*(?:orani|%))?",
        r"(?:ποσοστο\s*)?φπα(?:\s*%)?|ддс\s*%?",
        # Japanese "税率".
        ja(r"税\s?率"),
        # Chinese "稅率".
        r"稅\s?率",
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
        # Romanian "U.M." ("UM" alone in its cell: Portuguese "Um produto" is a row),
        # Hungarian "Mennyiségi egység", "M.E." (a bare "me" is Spanish and English: "Me
        # gusta"); Croatian "Jed. mj.", Slovene "Enota", "E.M."; Lithuanian "Mato vnt.";
        # Latvian "Mērv."; Estonian "Ühik"; Finnish "Yksikkö"; Turkish "Birim"; Greek
        # "Μονάδα (μέτρησης)", "Μ.Μ."; Bulgarian "Мярка", "Мерна единица".
        r"u\.\s*m\.?|um(?=\s*$)|mennyisegi\s*egyseg|m\.\s*e\.|jed\.?\s*mj\.?|j\.\s*m\.|jm|enota",
        r"e\.\s*m\.",
        r"mato\s*vnt\.?|mat\.\s*vnt\.?|vnt\.?|merv\.?|mervieniba|uhik|yksikko|yks\.?|birim",
        r"μοναδα(?:\s*μετρησησ)?|μ\.\s*μ\.|мярка|мерна\s*единица|м\.\s*ед\.?",
        r"ед\.?\s*изм\.?|од\.?\s*вим\.?",
        # Japanese "単位".
        ja(r"単\s?位"),
        # Chinese "单位", "單位".
        r"[单單]\s?位",
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
        r"reducere|sleva|zlava|kedvezmeny|popust|iskonto|nuolale|atlaide|alennus|"
        r"descompte|εκπτωση|отстъпка",
    ],
}

# Lines that end an item table: sums, tax summaries, payment terms.
TABLE_END = re.compile(
    r"^(?:umsatzsteuer\w*|steuer(?:betrag|aufschl\w*)?|belegsumme\w*|zahlungsbedingung\w*|"
    r"zahlungsart|summe|gesamt\w*|subtotal|sub-total|sub total|total|tax|vat|payment|"
    r"bemerkung\w*|notes|taxe|tva|btw|iva|netto|brutto|positionssumme|zwischensumme|"
    r"rechnungsbetrag|endbetrag|conditions|betalingsinformatie|totaal|base imponible|"
    r"imponibile|amount due|balance|cena bez dane|dph|stawka vat|razem|do zaplaty|yhteensa|"
    r"maksettava|sum|summa|totalt|i alt|mva|moms|subtotaal|importe total|valor total|"
    # Romanian, Slovak, Hungarian, Croatian, Slovene, Baltic, Turkish, Greek, Bulgarian sums.
    r"total de plata|baza|spolu|celkom|osszesen|vegosszeg|fizetendo|afa|ukupno|pdv|skupaj|"
    r"ddv|is viso|pvm|kopa|pvn|kokku|ara toplam|genel toplam|toplam|kdv|συνολο|φπα|общо|ддс|"
    # Payment terms: Romanian "Instrucțiuni de plată", "Condiții de plată".
    r"instructiuni de plata|conditii de plata|modalitate de plata)"
    r"(?![^\W\d_])"
    # Japanese sums and what follows the table, set without a space before their values
    # and often letter-spaced: "小計", "合　計", "消費税", "10%対象", "備考", "お振込先".
    r"|^(?:小\s?計|合\s?計|総\s?額|消\s?費\s?税|税抜|税込|\d{1,2}\s*%\s*対象|備\s?考|(?:お)?振込先|"
    # Chinese: "小计", "合计", "总计", "税额", "价税合计", "备注".
    r"小\s?[计計]|合\s?[计計]|[总總]\s?[计計]|[税稅]\s?[额額]|[价價][税稅]合[计計]|[备備]\s?注)"
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
