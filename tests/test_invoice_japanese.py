"""Japanese invoices (請求書), read on snippets written here: labels set against their values
without a space, full-width digits and colons, the yen as "¥", "￥" and "円", dates in the
Gregorian and the era calendar (令和, 平成), the addressee's honorific (御中, 様), the
legal forms before or after a name, and the qualified-invoice registration number.

The snippets are text laid out by spaces (two or more make a gap between cells), read as
a text layer without a PDF; one is drawn as a PDF in reportlab's Japanese CID font (its
glyphs are the reader's, not embedded), read by PDFium as an upload is."""

# Full-width characters are Japanese text's own, not look-alikes of ASCII ones.
# ruff: noqa: RUF001

from __future__ import annotations

import datetime
import io
from decimal import Decimal

import pytest
from reportlab.pdfbase import pdfmetrics  # type: ignore[import-untyped]
from reportlab.pdfbase.cidfonts import UnicodeCIDFont  # type: ignore[import-untyped]
from reportlab.pdfgen import canvas  # type: ignore[import-untyped]

from conveyor.agents.invoice_columns import TABLE_END, column_kind
from conveyor.agents.invoice_labels import TITLE, field_label, fold, sum_label
from conveyor.agents.invoice_party_labels import ADDRESSEE, TAX_ID, party_heading
from conveyor.agents.legal_forms import name_forms
from conveyor.agents.offline import extract_offline
from conveyor.agents.values import NumberStyle, cell_amount, currencies_in, dates_in, era_year
from conveyor.documents.text import extract_text
from tests.snippets import party_name, text_invoice_data

# A sheet of the Gregorian calendar: the buyer "御中", the number labelled, "¥" amounts.
JA_GREGORIAN = """\
                                   請求書

株式会社山田商事 御中                          請求日：2024年4月1日
〒100-0001 東京都千代田区丸の内1-1             請求書番号：INV-2024-0401
                                               お支払期限：2024年4月30日

                                               有限会社青空デザイン
                                               〒150-0002 東京都渋谷区渋谷2-3-4
                                               登録番号：T1234567890123

ご請求金額   ¥110,000（税込）

品名                 数量     単位     単価        金額
ウェブサイト制作       1       式     80,000      80,000
保守サポート           2       月     10,000      20,000

小計                                              ¥100,000
消費税（10%）                                     ¥10,000
合計                                              ¥110,000

お振込先
さくら銀行 渋谷支店 普通 7654321
口座名義 ユウゲンガイシャアオゾラデザイン

備考
恐れ入りますが、振込手数料は貴社にてご負担ください。
"""

# The era calendar, a letter-spaced title, full-width digits and "円" after the amounts.
JA_ERA = """\
                                     請 求 書

                                                         No. 2024-0153
株式会社みなと物産 御中                                  発行日：令和6年4月1日
〒530-0001 大阪府大阪市北区梅田1-2-3

件名：ウェブサイト保守 4月分                             合同会社ひかりシステム
                                                         〒812-0011 福岡県福岡市博多区博多駅前4-5-6
下記のとおりご請求申し上げます。                         TEL 092-000-1234
                                                         登録番号：T9876543210987

ご請求金額   ￥５５,０００－（税込）

お支払期限：令和6年4月30日

品目                         数量     単位     単価          金額
サーバー保守                  1        式       30,000        30,000
メールサポート                4        時間     5,000         20,000

                                             小計（税抜）    50,000円
                                             消費税（10%）    5,000円
                                             合計            55,000円

10%対象  50,000円   消費税  5,000円

お振込先
みなと銀行 本店営業部 普通 1234567
口座名義 ゴウドウガイシャヒカリシステム

備考
お振込手数料は貴社にてご負担くださいますようお願い申し上げます。
"""

# The honorific in a cell of its own, the amount due closed by a dash, the seller heading
# its block, a person as the buyer, labels letter-spaced by ideographic spaces ("合　計").
JA_PERSON = """\
                                   御請求書

鈴木 一郎    様                                 伝票番号：A-778
〒060-0001 北海道札幌市中央区北1条西2-3          請求年月日：2024/05/10
                                                 振込期日：2024/05/31

ご請求金額    ¥33,000-

摘　要                         数　量    単　価        金　額
庭木剪定作業                    1        30,000        30,000

                                          小　計        30,000
                                          消費税額       3,000
                                          合　計        33,000

請求元
株式会社みどり造園
〒060-0002 北海道札幌市中央区北2条西3-4
登録番号 T5555555555555

お振込先
北の銀行 大通支店 普通 1111111
"""

INVOICES = {
    "gregorian": (
        JA_GREGORIAN,
        (
            "INV-2024-0401",
            "2024-04-01",
            "2024-04-30",
            "有限会社青空デザイン",
            "株式会社山田商事",
            "100000",
            "10000",
            "110000",
            "T1234567890123",
        ),
    ),
    "person": (
        JA_PERSON,
        (
            "A-778",
            "2024-05-10",
            "2024-05-31",
            "株式会社みどり造園",
            "鈴木 一郎",
            "30000",
            "3000",
            "33000",
            "T5555555555555",
        ),
    ),
    "era": (
        JA_ERA,
        (
            "2024-0153",
            "2024-04-01",
            "2024-04-30",
            "合同会社ひかりシステム",
            "株式会社みなと物産",
            "50000",
            "5000",
            "55000",
            "T9876543210987",
        ),
    ),
}


@pytest.mark.parametrize("calendar", sorted(INVOICES))
def test_a_japanese_invoice_is_read(calendar: str) -> None:
    text, (number, issued, due, seller, buyer, net, tax, total, tax_id) = INVOICES[calendar]
    data = text_invoice_data(text)
    assert data["number"] == number
    assert data["issue_date"] == issued
    assert data["due_date"] == due
    assert party_name(data, "vendor") == seller
    assert party_name(data, "customer") == buyer
    assert (data["subtotal"], data["tax"], data["total"]) == (net, tax, total)
    assert data["currency"] == "JPY"
    vendor = data["vendor"]
    assert isinstance(vendor, dict) and vendor["tax_id"] == tax_id
    items = data["line_items"]
    assert isinstance(items, list) and len(items) == (1 if calendar == "person" else 2)
    assert isinstance(items[0], dict) and items[0]["quantity"] == "1"


def test_a_due_date_asked_for_in_a_sentence() -> None:
    # The date first, then "までに" (by) and the verb: no label names the due date.
    text = JA_GREGORIAN.replace(
        "                                               お支払期限：2024年4月30日\n", ""
    )
    assert "お支払期限" not in text
    text += "2024年4月30日（火）までに下記口座へお振込みください。\n"
    data = text_invoice_data(text)
    assert (data["issue_date"], data["due_date"]) == ("2024-04-01", "2024-04-30")


# Prices with their tax in them: the total "(税込)" and the tax it includes, "(内消費税 …)",
# set in brackets across two cells; a sole trader's name, no legal form, over its address.
JA_TAX_INCLUDED = """\
                                   請求書 / INVOICE

株式会社山田商事 様                            No. 000123
                                               日付：2024年9月1日

                                               山田デザイン
                                               〒150-0002 東京都渋谷区渋谷2-3-4
                                               登録番号 T1234567890123

品名                 数量     単価        金額
ロゴ制作             1        11,000      11,000

合計(税込)                                        ¥11,000
(内消費税10%                                      ¥1,000)

お支払期限 2024年9月30日

お振込先
さくら銀行 渋谷支店 普通 7654321
口座名義 ヤマダデザイン

備考
恐れ入りますが、振込手数料は貴社にてご負担ください。
"""


def test_the_person_in_charge_names_the_buyer_above() -> None:
    # "ご担当者様" is no buyer's name, but the name over it, without an honorific, is one.
    text = JA_GREGORIAN.replace("株式会社山田商事 御中   ", "株式会社山田商事        ")
    text = text.replace(
        "〒100-0001 東京都千代田区丸の内1-1 ", "経理部 ご担当者様                  "
    )
    assert "ご担当者様" in text and "御中" not in text
    data = text_invoice_data(text)
    assert party_name(data, "customer") == "株式会社山田商事"
    assert party_name(data, "vendor") == "有限会社青空デザイン"


def test_a_total_with_the_tax_it_includes() -> None:
    data = text_invoice_data(JA_TAX_INCLUDED)
    assert (data["number"], data["issue_date"], data["due_date"]) == (
        "000123",
        "2024-09-01",
        "2024-09-30",
    )
    assert party_name(data, "vendor") == "山田デザイン"
    assert party_name(data, "customer") == "株式会社山田商事"
    assert (data["subtotal"], data["tax"], data["total"]) == ("10000", "1000", "11000")
    assert sum_label("(内消費税10%") == ("tax", 5)
    assert sum_label("（うち消費税") == ("tax", 6)
    assert cell_amount("¥1,000)", NumberStyle(".", ",")) == Decimal("1000")


def test_the_era_calendar() -> None:
    assert era_year("令和", "6") == 2024
    assert era_year("令和", "元") == 2019
    assert era_year("平成", "31") == 2019
    assert era_year("平成", "1") == 1989
    assert era_year("昭和", "64") == 1989
    assert era_year("大化", "1") is None
    assert era_year("令和", "0") is None


def test_japanese_dates() -> None:
    for text, date in {
        "2024年4月1日": datetime.date(2024, 4, 1),
        "2024 年 04 月 01 日(月)": datetime.date(2024, 4, 1),
        "令和6年4月1日": datetime.date(2024, 4, 1),
        "令和元年5月1日": datetime.date(2019, 5, 1),
        "平成31年4月30日": datetime.date(2019, 4, 30),
        "令和6.4.1": datetime.date(2024, 4, 1),
        "令和元/05/01": datetime.date(2019, 5, 1),
        "発行日2024/04/01": datetime.date(2024, 4, 1),
    }.items():
        found = dates_in(text)
        assert [token.date for token in found] == [date], text
    # A month's bill ("4月分") and an impossible day are no dates.
    assert dates_in("2024年4月分") == []
    assert dates_in("令和6年2月30日") == []
    assert dates_in("令和6.4.1.2") == []  # no date: a number of parts


def test_japanese_field_labels() -> None:
    for text, kind in {
        "請求書番号：INV-1": "number",
        "請求番号": "number",
        "伝票番号": "number",
        "請求日：2024年4月1日": "issue",
        "発行日": "issue",
        "請求年月日": "issue",
        "日付": "date",
        "支払期限": "due",
        "お支払期限：2024年4月30日": "due",
        "お支払い期日": "due",
        "振込期限": "due",
        "支払期日": "due",
        "お支払日": "due",
        "納品日": "-date",
        "注文番号": "-number",
        "登録番号：T1234567890123": "-number",
    }.items():
        found = field_label(text)
        assert found is not None and found[0] == kind, (text, found)
    assert field_label("請求日：2024年4月1日") == ("issue", 3)


def test_japanese_sum_labels() -> None:
    for text, kind in {
        "小計": "net",
        "税抜合計": "net",
        "税抜金額": "net",
        "小計（税抜）": "net",
        "合計": "gross",
        "合計金額": "gross",
        "総額": "gross",
        "税込合計": "gross",
        "合計（税込）": "gross",
        "消費税": "tax",
        "消費税額": "tax",
        "税額": "tax",
        "内消費税": "tax",
        "消費税（10%）": "tax",
        "10%対象消費税": "tax",
        "ご請求金額": "due",
        "請求金額": "due",
        "10%対象": "-sum",
        "8%対象": "-sum",
        "合 計": "gross",
        "小 計": "net",
        "消 費 税": "tax",
    }.items():
        found = sum_label(text)
        assert found is not None and found[0] == kind, (text, found)
    assert sum_label("計") is None


def test_japanese_titles_headings_and_columns() -> None:
    for title in ("請求書", "御請求書", "請 求 書", "領収書", "納品書兼請求書"):
        assert TITLE.match(fold(title)), title
    assert not TITLE.match(fold("納品書"))  # a delivery note
    assert not TITLE.match(fold("請求書番号"))  # the number's label
    assert party_heading("ご請求先：") == ("buyer", 4)
    assert party_heading("請求元")[0] == "seller"  # type: ignore[index]
    assert party_heading("お届け先")[0] == "other"  # type: ignore[index]
    for header, kind in {
        "品名": "description",
        "摘要": "description",
        "数量": "quantity",
        "単位": "unit",
        "単価": "price",
        "金額": "amount",
        "税率": "rate",
        "品 名": "description",
        "数 量": "quantity",
    }.items():
        assert column_kind(header) == kind, header
    for end in ("小計", "合計金額", "10%対象", "備考", "お振込先"):
        assert TABLE_END.match(fold(end)), end


def test_the_addressee_legal_forms_and_registration_number() -> None:
    found = ADDRESSEE.match("株式会社山田商事 御中")
    assert found is not None and found.group("name") == "株式会社山田商事"
    found = ADDRESSEE.match("山田 太郎 様")
    assert found is not None and found.group("name") == "山田 太郎"
    assert ADDRESSEE.match("様") is None
    assert ADDRESSEE.match("お客様") is None  # "the customer": no one's name
    assert ADDRESSEE.match("12345 様") is None
    assert ADDRESSEE.match("経理部 ご担当者様") is None
    assert ADDRESSEE.match("ご担当 様") is None
    for name, form in {
        "株式会社山田商事": "株式会社",
        "山田商事株式会社": "株式会社",
        "合同会社ひかり": "合同会社",
        "(株)みなと": "(株)",
        "㈱みなと": "㈱",
    }.items():
        assert [m.group(0) for m in name_forms(name)] == [form], name
    assert name_forms("株式会社") == []  # the form alone names no one
    assert TAX_ID.match(fold("登録番号：T1234567890123"))


def test_yen_amounts_and_signs() -> None:
    style = NumberStyle(".", ",")
    for cell in ("¥110,000", "110,000円", "¥110,000(税込)", "1,234円(税抜)"):
        assert cell_amount(cell, style) is not None, cell
    assert cell_amount("110,000円", style) == Decimal("110000")
    # A whole amount closed by a dash is no negative one: "¥55,000-", "55,000円-".
    for cell in ("¥55,000-", "¥55,000-(税込)", "55,000円-"):
        assert cell_amount(cell, style) == Decimal("55000"), cell
    assert cell_amount("1,234-", style) is None
    assert currencies_in("合計 55,000円") == {"JPY": 1}


def _japanese_pdf(texts: list[tuple[float, float, str, float]]) -> bytes:
    """An A4 page with each (x, y from the top, text, size) in a Japanese CID font."""
    pdfmetrics.registerFont(UnicodeCIDFont("HeiseiKakuGo-W5"))
    out = io.BytesIO()
    page = canvas.Canvas(out, pagesize=(595, 842))
    for x, y, text, size in texts:
        page.setFont("HeiseiKakuGo-W5", size)
        page.drawString(x, 842 - y, text)
    page.showPage()
    page.save()
    return out.getvalue()


def test_a_japanese_pdf_is_read_by_its_word_boxes() -> None:
    rows = [("品名", "数量", "単価", "金額"), ("ウェブサイト制作", "1", "80,000", "80,000")]
    rows.append(("保守サポート", "2", "10,000", "20,000"))
    texts = [
        (250.0, 60.0, "請 求 書", 18.0),
        (40.0, 110.0, "株式会社山田商事 御中", 11.0),
        (40.0, 124.0, "〒100-0001 東京都千代田区丸の内1-1", 9.0),
        (360.0, 110.0, "請求日：２０２４年４月１日", 9.0),
        (360.0, 124.0, "請求書番号：INV-2024-0401", 9.0),
        (360.0, 138.0, "お支払期限：令和6年4月30日", 9.0),
        (360.0, 170.0, "有限会社青空デザイン", 10.0),
        (360.0, 184.0, "〒150-0002 東京都渋谷区渋谷2-3-4", 9.0),
        (360.0, 198.0, "登録番号：T1234567890123", 9.0),
        (40.0, 240.0, "ご請求金額", 12.0),
        (140.0, 240.0, "￥110,000-（税込）", 12.0),
        (380.0, 360.0, "小計", 9.0),
        (480.0, 360.0, "¥100,000", 9.0),
        (380.0, 376.0, "消費税（10%）", 9.0),
        (480.0, 376.0, "¥10,000", 9.0),
        (380.0, 392.0, "合計", 9.0),
        (480.0, 392.0, "¥110,000", 9.0),
        (40.0, 700.0, "お振込先", 9.0),
        (40.0, 714.0, "さくら銀行 渋谷支店 普通 7654321", 9.0),
    ]
    for k, row in enumerate(rows):
        for x, text in zip((40.0, 250.0, 380.0, 480.0), row, strict=True):
            texts.append((x, 290.0 + 16 * k, text, 9.0))
    result = extract_offline(extract_text(_japanese_pdf(texts)), "invoice")
    data = result.data
    assert isinstance(data, dict)
    assert (data["number"], data["issue_date"], data["due_date"]) == (
        "INV-2024-0401",
        "2024-04-01",
        "2024-04-30",
    )
    assert party_name(data, "vendor") == "有限会社青空デザイン"
    assert party_name(data, "customer") == "株式会社山田商事"
    assert (data["subtotal"], data["tax"], data["total"]) == ("100000", "10000", "110000")
    assert data["currency"] == "JPY"
    # The page is in Japanese: its "¥" is the yen, not the yuan.
    assert result.fields["currency"] >= 0.9
