"""Chinese invoices (发票, 發票), read on snippets written here: a VAT invoice's labels
(发票号码, 开票日期, 购买方 / 销售方, 名称, 纳税人识别号, 价税合计), a commercial invoice in
Simplified Chinese, Traditional Chinese labels, "¥" as the yuan on a page without kana,
the New Taiwan and Hong Kong dollars, and the Republic of China's years (民國).

The snippets are text laid out by spaces (two or more make a gap between cells), read as
a text layer without a PDF."""

# Full-width characters are Chinese text's own, not look-alikes of ASCII ones.
# ruff: noqa: RUF001

from __future__ import annotations

import datetime
from collections.abc import Callable

import pytest

from conveyor.agents.invoice_columns import column_kind
from conveyor.agents.invoice_labels import field_label, sum_label
from conveyor.agents.invoice_party_labels import TAX_ID, name_label, party_heading
from conveyor.agents.values import currencies_in, currency_of, dates_in, era_year, yen_or_yuan
from tests.snippets import party_name, text_invoice_data

# A VAT invoice's layout: the buyer's and seller's blocks under their headings, each with
# its name and taxpayer number, a table of items, and the total with tax in figures.
ZH_VAT = """\
                                   增值税普通发票

发票代码：044031900111                          发票号码：08812345
                                                开票日期：2024年1月15日
购买方
名称：深圳市蓝海科技有限公司
纳税人识别号：91440300MA5ABCDE1X

货物或应税劳务名称     规格型号      单位    数量    单价          金额            税率      税额
软件开发服务                  项     1     10,000.00   10,000.00     6%      600.00
技术支持                    月     2     500.00      1,000.00      6%      60.00
合计                                              ¥11,000.00            ¥660.00
价税合计（大写）  壹万壹仟陆佰陆拾圆整        （小写）¥11,660.00

销售方
名称：广州市青山信息技术有限公司
纳税人识别号：91440101MA9XYZWV2Q
"""

# A commercial invoice from a Chinese supplier: seller and buyer by their short words,
# the subtotal, tax and total each labelled, the yuan as "RMB".
ZH_COMMERCIAL = """\
                                     商业发票

卖方：宁波市东港五金制品有限公司                     发票号码：NB-2024-0311
浙江省宁波市北仑区新碶街道100号                       日期：2024年3月11日
统一社会信用代码：91330206MA2H1234XY

买方：Harbor Tools Ltd.
12 Quay Street, Auckland

品名                  数量      单价         金额
不锈钢螺丝             500       2.00         1,000.00
铰链                   100       5.00         500.00

小计                                          1,500.00
税额（13%）                                   195.00
总计                                          RMB 1,695.00
"""


def test_a_vat_invoice_is_read() -> None:
    data = text_invoice_data(ZH_VAT)
    assert data["number"] == "08812345"
    assert data["issue_date"] == "2024-01-15"
    assert party_name(data, "vendor") == "广州市青山信息技术有限公司"
    assert party_name(data, "customer") == "深圳市蓝海科技有限公司"
    vendor = data["vendor"]
    assert isinstance(vendor, dict) and vendor["tax_id"] == "91440101MA9XYZWV2Q"
    assert data["currency"] == "CNY"
    # "合计" over the amount and tax columns: the net and the tax, which the total adds up.
    assert (data["subtotal"], data["tax"], data["total"]) == ("11000.00", "660.00", "11660.00")
    items = data["line_items"]
    assert isinstance(items, list) and len(items) == 2
    assert isinstance(items[1], dict)
    assert (items[1]["quantity"], items[1]["unit_price"], items[1]["amount"]) == (
        "2",
        "500.00",
        "1000.00",
    )


def test_a_commercial_invoice_is_read() -> None:
    data = text_invoice_data(ZH_COMMERCIAL)
    assert data["number"] == "NB-2024-0311"
    assert data["issue_date"] == "2024-03-11"
    assert party_name(data, "vendor") == "宁波市东港五金制品有限公司"
    assert party_name(data, "customer") == "Harbor Tools Ltd."
    vendor = data["vendor"]
    assert isinstance(vendor, dict) and vendor["tax_id"] == "91330206MA2H1234XY"
    assert (data["subtotal"], data["tax"], data["total"]) == ("1500.00", "195.00", "1695.00")
    assert data["currency"] == "CNY"


# Each vocabulary reader of the shared tables: a label and the kind it reads as.
_FIELD_LABELS = [
    ("发票号码：08812345", "number"),
    ("發票號碼：AB-12345678", "number"),
    ("发票代码：044031900111", "reference"),
    ("开票日期：2024年1月15日", "issue"),
    ("開票日期：民國113年1月15日", "issue"),
    ("日期：2024年3月11日", "date"),
]
_SUM_LABELS = [
    ("小计 1,500.00", "net"),
    ("税额 195.00", "tax"),
    ("稅額 195.00", "tax"),
    ("总计 1,695.00", "gross"),
    ("總計 1,695.00", "gross"),
    ("合计 1,695.00", "gross"),
    ("价税合计（小写）¥11,660.00", "gross"),
]
_PARTY_HEADINGS = [
    ("购买方", "buyer"),
    ("購買方", "buyer"),
    ("买方：", "buyer"),
    ("客户", "buyer"),
    ("销售方", "seller"),
    ("銷售方", "seller"),
    ("卖方：", "seller"),
    ("供应商", "seller"),
]


@pytest.mark.parametrize(
    ("read", "label", "kind"),
    [
        *((field_label, label, kind) for label, kind in _FIELD_LABELS),
        *((sum_label, label, kind) for label, kind in _SUM_LABELS),
        *((party_heading, label, kind) for label, kind in _PARTY_HEADINGS),
    ],
)
def test_labels(read: Callable[[str], tuple[str, int] | None], label: str, kind: str) -> None:
    found = read(label)
    assert found is not None and found[0] == kind


def test_name_and_tax_id_labels() -> None:
    assert name_label("名称：深圳市蓝海科技有限公司") is not None
    assert name_label("名稱") is None  # a column of items' names, without its colon
    for label in ("纳税人识别号：91440300MA5ABCDE1X", "統一編號：12345678"):
        assert TAX_ID.search(label)


@pytest.mark.parametrize(
    ("header", "kind"),
    [
        ("单价", "price"),
        ("單價", "price"),
        ("數量", "quantity"),
        ("金额", "amount"),
        ("单位", "unit"),
        ("稅率", "rate"),
        ("项目名称", "description"),
        ("货物或应税劳务名称", "description"),
    ],
)
def test_column_headers(header: str, kind: str) -> None:
    assert column_kind(header) == kind


def test_yen_sign_is_the_yuan_without_kana() -> None:
    assert yen_or_yuan("JPY", "合计 ¥11,000.00") == "CNY"
    assert yen_or_yuan("JPY", "合計 ¥11,000 お支払期限") == "JPY"  # kana: Japanese
    assert yen_or_yuan("JPY", "Total ¥11,000") == "JPY"  # no ideographs: undecided, as before
    assert yen_or_yuan("USD", "合计 $100") == "USD"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("NT$1,200", "TWD"),
        ("RMB 1,695.00", "CNY"),
        ("1,695.00元", "CNY"),
        ("人民币 1,695.00", "CNY"),
    ],
)
def test_currency_beside_an_amount(text: str, code: str) -> None:
    assert currency_of(text) == code


def test_currency_names_in_text() -> None:
    assert currencies_in("合計 新台幣 1,200") == {"TWD": 1}
    assert currencies_in("总计 港币 350") == {"HKD": 1}
    assert currencies_in("Total HK$ 350.00") == {"HKD": 1}  # not the US dollar's "$"
    assert currencies_in("Total NT$ 1,200") == {"TWD": 1}
    assert currencies_in("发行元 100") == {}  # "元" away from an amount names nothing


def test_republic_of_china_years() -> None:
    assert era_year("民國", "113") == 2024
    assert era_year("民国", "元") == 1912
    assert [d.date for d in dates_in("開票日期：民國113年1月15日")] == [datetime.date(2024, 1, 15)]
    assert [d.date for d in dates_in("民国113.01.15")] == [datetime.date(2024, 1, 15)]
