"""The contract reader's rules on small snippets of real contracts (SEC EDGAR exhibits,
public records, as collected in CUAD; benchmarks/contracts has them whole)."""

from __future__ import annotations

import datetime

from conveyor.agents.contract_rules import read_contract
from conveyor.agents.offline import classify
from conveyor.documents.text import DocumentText, PageText
from conveyor.documents.types import Contract


def read(text: str) -> tuple[Contract, dict[str, float]]:
    return read_contract(text)


def names_and_roles(contract: Contract) -> list[tuple[str | None, str | None]]:
    return [(p.name, p.role) for p in contract.parties]


# ------------------------------------------------------------------------------ parties


def test_a_term_after_each_description_and_the_next_party_after_and() -> None:
    contract, fields = read(
        "This Development Agreement (the \u201cAgreement\u201d) dated as of March 20, 2020 "
        "(the \u201cEffective Date\u201d) is entered into by and between CNS Pharmaceuticals, "
        "Inc. (\u201cCNS\u201d), a Nevada corporation, having a business address of 2100 West "
        "Loop South, Suite 900, Houston, Texas 77027, and WPD Pharmaceuticals, (\u201cWPD\u201d), "
        "a Polish corporation. RECITALS WHEREAS, WPD is party to a sublicense agreement "
        "dated February 19, 2019 with Moleculin Biotech, Inc. (\u201cMBI\u201d)."
    )
    # the address's commas do not start a party; the recitals' "MBI" is not a term of WPD
    assert names_and_roles(contract) == [
        ("CNS Pharmaceuticals, Inc.", "CNS"),
        ("WPD Pharmaceuticals", "WPD"),
    ]
    # WPD's name has no legal form and is not printed again: not trusted yet
    assert fields["parties"] < 0.9
    assert contract.effective_date == datetime.date(2020, 3, 20)  # not the recital's date


def test_a_name_printed_again_by_the_signatures_is_trusted() -> None:
    preamble = (
        "This Development Agreement is entered into by and between CNS Pharmaceuticals, "
        "Inc. (\u201cCNS\u201d), a Nevada corporation, and WPD Pharmaceuticals, "
        "(\u201cWPD\u201d), a Polish corporation. RECITALS WHEREAS, WPD develops drugs. "
    )
    signatures = "CNS Pharmaceuticals, Inc. By: /s/ John Climaco WPD Pharmaceuticals By: /s/"
    _, fields = read(preamble + signatures)
    assert fields["parties"] >= 0.9


def test_a_legal_form_stays_and_a_dba_name_goes() -> None:
    contract, _ = read(
        "SUPPLY AGREEMENT This Agreement (\u201cthe Agreement\u201d), is made by and between "
        "EWSD 1, LLC, d/b/a/ SHI FARMS (\u201cShi Farms\u201d), a Delaware limited liability "
        "company and Gridiron BioNutrients, Inc, a Nevada Corporation (\u201cGridiron\u201d) , "
        "each individually \u201ca Party,\u201d and collectively, \u201cthe Parties.\u201d "
        "WHEREAS Shi Farms grows industrial hemp"
    )
    # "company and Gridiron": an "and" after a description's last word starts a party
    assert names_and_roles(contract) == [
        ("EWSD 1, LLC", "Shi Farms"),
        ("Gridiron BioNutrients, Inc", "Gridiron"),
    ]


def test_four_parties_and_a_group_term_that_is_none_of_them() -> None:
    contract, _ = read(
        "THIS NON-COMPETITION AND NON-SOLICITATION AGREEMENT (this \u201cAgreement\u201d), "
        "dated as of August 1, 2019 (the \u201cEffective Date\u201d), is entered into by Quaker "
        "Chemical Corporation (\u201cBuyer\u201d), a Pennsylvania corporation, Gulf Houghton "
        "Lubricants Ltd., a company incorporated in the Cayman Islands (\u201cGulf "
        "Houghton\u201d), Gulf Oil International Limited, a company incorporated in the "
        "Cayman Islands (\u201cGulf International\u201d), and GOCL Corporation Limited, a "
        "public limited company incorporated in India (\u201cGulf Oil\u201d and, together with "
        "Gulf Houghton and Gulf International, the \u201cSellers\u201d and each, a "
        "\u201cSeller\u201d). WHEREAS, Gulf Houghton owns shares"
    )
    assert names_and_roles(contract) == [
        ("Quaker Chemical Corporation", "Buyer"),
        ("Gulf Houghton Lubricants Ltd.", "Gulf Houghton"),
        ("Gulf Oil International Limited", "Gulf International"),
        ("GOCL Corporation Limited", "Gulf Oil"),
    ]


def test_a_role_word_wins_over_a_short_form_of_the_name() -> None:
    contract, _ = read(
        "This CONSULTING AGREEMENT (\u201cAgreement\u201d) effective as of this 1st day of "
        "March 2020 is hereby entered into between Gunston Consulting, LLC "
        "(\u201cCONSULTANT\u201d), a Virginia limited liability company, and Medalist "
        "Diversified REIT, Inc. (\u201cREIT\u201d or the \u201cCompany\u201d), a Maryland "
        "corporation, collectively the \u201cParties.\u201d NOW THEREFORE, in consideration"
    )
    assert names_and_roles(contract) == [
        ("Gunston Consulting, LLC", "CONSULTANT"),
        ("Medalist Diversified REIT, Inc.", "Company"),
    ]
    assert contract.effective_date == datetime.date(2020, 3, 1)  # "1st day of March 2020"


def test_a_placeholder_party_is_looked_up_in_its_block() -> None:
    contract, fields = read(
        "RESELLER AGREEMENT THIS RESELLER AGREEMENT (this \u201cAgreement\u201d) is made and "
        "entered into effect the 7th day of April, 2017 (\u201cEffective Date\u201d), by and "
        "between i3 Integrative Creative Solutions, LLC (\u201ci3 ICS\u201d), a Virginia "
        "limited liability company, having its offices at 6564 Loisdale Court Suite 1010B, "
        "Springfield, VA 22150 (\u201cReseller\u201d) and the company set forth below "
        "(\u201cCompany\u201d) (each, individually, a \u201cparty\u201d and collectively, "
        "\u201cparties\u201d):\n"
        "Company: Bravatek Solutions, Inc. (BVTK) Telephone: 1-866-490-8590\n"
        "Agreement Term: 1 Year\n"
        "The parties agree as follows:"
    )
    assert names_and_roles(contract) == [
        ("i3 Integrative Creative Solutions, LLC", "Reseller"),
        ("Bravatek Solutions, Inc.", "Company"),
    ]
    assert contract.effective_date == datetime.date(2017, 4, 7)
    assert contract.term_months == 12 and fields["term_months"] >= 0.9


def test_party_blocks_without_a_preamble() -> None:
    contract, fields = read(
        "Road Transportation Agreement\n"
        "Party A (Shipper): ZTO Express Co., Ltd.\n"
        "Address: Building 1, No. 1685, Huazhi Road, Qingpu District, Shanghai\n"
        "Party B (Carrier): Tonglu Tongze Logistics Ltd.\n"
        "Address: 12 Floor, HSBC Tower, Yinchun South Road, Tonglu County\n"
        "Due to the need for logistics business, Party A and Party B enter into this "
        "Road Transportation Agreement."
    )
    assert names_and_roles(contract) == [
        ("ZTO Express Co., Ltd.", "Shipper"),
        ("Tonglu Tongze Logistics Ltd.", "Carrier"),
    ]
    assert 0 < fields["parties"] < 0.95


def test_a_german_preamble() -> None:
    contract, _ = read(
        "DIENSTLEISTUNGSVERTRAG Dieser Dienstleistungsvertrag (\u201eVertrag\u201c) wird am "
        "1. M\u00e4rz 2025 (\u201eWirksamkeitsdatum\u201c) geschlossen zwischen Acme GmbH, einer "
        "Gesellschaft deutschen Rechts mit Sitz Hauptstra\u00dfe 1, 10115 Berlin "
        "(\u201eAuftragnehmer\u201c), und Beta Corp., einer Gesellschaft nach dem Recht des "
        "US-Bundesstaates Delaware (\u201eAuftraggeber\u201c). Der Auftraggeber zahlt 10 000 "
        "USD pro Kalendermonat, zahlbar innerhalb von 30 Tagen nach Rechnungsstellung. "
        "Dieser Vertrag unterliegt dem Recht des Bundesstaates Delaware, USA."
    )
    assert names_and_roles(contract) == [
        ("Acme GmbH", "Auftragnehmer"),
        ("Beta Corp.", "Auftraggeber"),
    ]
    assert contract.effective_date == datetime.date(2025, 3, 1)
    assert contract.payment_terms == "Net 30"
    assert contract.governing_law == "Bundesstaates Delaware"


# ------------------------------------------------------------------------ dates and term


def test_a_blank_date_in_a_form_is_no_date() -> None:
    contract, fields = read(
        "TRADEMARK LICENSE AGREEMENT This TRADEMARK LICENSE AGREEMENT (this "
        "\u201cAgreement\u201d) is made and effective as of [\u00b7], 2019 (the \u201cEffective "
        "Date\u201d), by and among New Mountain Capital, L.L.C., a Delaware limited liability "
        "company (the \u201cLicensor\u201d), and NMF Senior Loan Fund I, Inc., a Maryland "
        "corporation (the \u201cLicensee\u201d). RECITALS WHEREAS, the Licensee is a fund. "
        "4.1. Term. The license granted to the Licensee under this Agreement shall continue "
        "perpetually."
    )
    assert contract.effective_date is None and fields["effective_date"] < 0.9
    assert contract.term_months is None
    assert names_and_roles(contract)[0] == ("New Mountain Capital, L.L.C.", "Licensor")


def test_the_date_noted_below_is_the_signature_date() -> None:
    filler = "The Company makes its platform available to the Customer. " * 20
    contract, fields = read(
        "SERVICES AGREEMENT This Services Agreement is entered into as of the date noted "
        "below (the \u201cEffective Date\u201d) between StartEngine Crowdfunding, Inc., a "
        "Delaware corporation (\u201cCompany\u201d), and Solutions Vending International, Inc "
        "(\u201cCustomer\u201d). " + filler + "StartEngine Crowdfunding, Inc. Customer: By: /s/ "
        "Dawn Dickson, CEO and Founder Date: 08/19/2019"
    )
    assert contract.effective_date == datetime.date(2019, 8, 19)
    assert fields["effective_date"] < 0.9  # read by the signatures, not stated


def test_the_term_in_words_and_digits_and_a_survival_period_that_is_not_it() -> None:
    contract, fields = read(
        "5. Exclusivity. During the Term hereof and for a period of six (6) months "
        "following the termination of this Agreement, the Reseller shall have the "
        "exclusive right to commission. 12. TERM AND TERMINATION 12.1 Term. This Agreement "
        "shall become effective upon the date first written above and shall remain in full "
        "force and effect for a period of two years (2), unless earlier terminated. This "
        "Agreement shall expire unless extended by both parties in writing prior to the "
        "termination."
    )
    assert contract.term_months == 24 and fields["term_months"] >= 0.9
    assert contract.renewal.auto_renew is False  # only by both parties' writing


def test_a_confidentiality_period_is_not_the_term() -> None:
    contract, _ = read(
        "5.1 During the term of this Agreement and for a period of five (5) years "
        "thereafter, the Parties each agree that Confidential Information shall be kept "
        "secret. 6.1 The term of this Agreement will commence on the Effective Date and "
        "remain in full force and effect until the expiration of the Sublicense Agreement."
    )
    assert contract.term_months is None


def test_a_term_that_ends_on_a_date_counts_whole_months() -> None:
    contract, fields = read(
        "THIS AGREEMENT is made this 1st day of August, 2013, (the \u201cEffective Date\u201d), "
        "by and between Snotarator LLC (the \u201cCompany\u201d) and SMSA Ballinger "
        "Acquisition Corp. (the \u201cDistributor\u201d). 6.01. Term. The term of this "
        "Agreement shall terminate on May 31, 2015, unless sooner terminated."
    )
    assert contract.effective_date == datetime.date(2013, 8, 1)
    assert contract.term_months == 22 and fields["term_months"] < 0.9


def test_a_bare_number_in_words_after_a_weak_cue_is_not_read() -> None:
    contract, _ = read("This Agreement begins on the Effective Date and continues for two years.")
    assert contract.term_months is None


# ------------------------------------------------------------------------------ renewal


def test_renews_automatically_and_its_notice_is_not_a_no_renewal() -> None:
    contract, fields = read(
        "TERM AND TERMINATION The term of this Agreement for the Hosted Site shall commence "
        "upon April 1, 1999 and shall continue for a period of six (6) months, unless "
        "earlier terminated in accordance with provisions hereof. This Agreement shall "
        "automatically be renewed for one (1) or more one (1) month periods unless either "
        "the Customer or i-on gives notice to the other party of its intention not to "
        "renew the\n4\nAgreement, which notice must be given not less than fifteen (15) days "
        "before the end of the respective initial or renewal term."
    )
    assert contract.term_months == 6
    assert contract.renewal.auto_renew is True and contract.renewal.notice_days == 15
    assert fields["renewal.notice_days"] >= 0.9


def test_the_notice_in_the_sentence_before_the_renewal() -> None:
    contract, fields = read(
        "TERM & TERMINATION. This Agreement is for a term (the \u201cTerm\u201d) of 12 months "
        "from the Effective Date on June 1st 2020 and expiring May 31st 2021. (a) In the case "
        "that the company would not like to extend the terms of agreement for an additional "
        "month. The company must notify the consultant within 5 days of the conclusion of "
        "the 12 month term. Without notification the contract will automatically extend for "
        "an additional month of service."
    )
    assert contract.term_months == 12
    assert contract.renewal.auto_renew is True and contract.renewal.notice_days == 5
    assert fields["renewal.notice_days"] < fields["renewal.auto_renew"]


def test_nothing_said_about_renewal_is_nothing_known() -> None:
    contract, fields = read("Either Party may terminate this Agreement at any time.")
    assert contract.renewal.auto_renew is None and fields["renewal.auto_renew"] < 0.9


# ------------------------------------------------------------------- law and payment


def test_governing_law_with_commas_and_in_capitals() -> None:
    contract, fields = read(
        "5.5. Governing Law. This Agreement shall be governed by, and construed in "
        "accordance with, the laws of the State of New York without giving effect to the "
        "principles of conflicts of law rules."
    )
    assert contract.governing_law == "State of New York" and fields["governing_law"] >= 0.9
    contract, _ = read(
        "4. Governing Law. (a) THIS AGREEMENT SHALL BE GOVERNED BY AND CONSTRUED IN "
        "ACCORDANCE WITH THE INTERNAL LAWS OF THE COMMONWEALTH OF PENNSYLVANIA WITHOUT "
        "GIVING EFFECT TO ANY CHOICE OR CONFLICT OF LAW PROVISION"
    )
    assert contract.governing_law == "COMMONWEALTH OF PENNSYLVANIA"


def test_a_party_organized_under_a_law_and_a_venue_are_not_the_governing_law() -> None:
    contract, fields = read(
        "LEADER is a corporation duly organized, validly existing, and in good standing "
        "under the laws of the Nevada. Nothing herein shall be construed as a waiver under "
        "the laws of any jurisdiction. Any disputes arising herein shall be settled in a "
        "court in Florida."
    )
    assert contract.governing_law is None and fields["governing_law"] < 0.9


def test_net_days_and_days_that_are_not_payment_terms() -> None:
    contract, fields = read(
        "6.1 Payment Terms. JRVS shall submit an invoice to the Distributor upon shipment "
        "of Products. Terms of payment shall be net thirty (30) days. All payments shall "
        "be in U.S. Dollars."
    )
    assert contract.payment_terms == "Net 30" and fields["payment_terms"] >= 0.9
    contract, _ = read(
        "Pursuant to the doctrine of sequential liability, payment from Kubient to Customer "
        "shall be made within seven (7) days from Kubient's receipt of payment, regardless "
        "of when Customer submits an invoice. Referral Fees will be paid within thirty (30) "
        "days of the collection of receivables from the Registered Referral."
    )
    assert contract.payment_terms is None


def test_days_from_an_invoice_are_payment_terms() -> None:
    contract, _ = read(
        "Mobimagic will send an invoice to PC Financial on monthly basis. After PC Financial "
        "confirms that invoice contents are correct, PC Financial shall pay within 45 days "
        "after confirming thus."
    )
    assert contract.payment_terms == "Net 45"


# --------------------------------------------------------------------- the page stream


def test_a_running_footer_does_not_break_a_clause() -> None:
    footer = "Source: ACME CORP, 8-K, 3/26/2020"
    contract, _ = read(
        f"Exhibit 10.1\nThis Agreement will be governed by, construed and enforced in\n"
        f"{footer}\n2\naccordance with the laws of the State of Texas. Payment is due\n"
        f"{footer}\n3\nwithin thirty (30) days of the invoice date. End.\n{footer}\n4"
    )
    assert contract.governing_law == "State of Texas"
    assert contract.payment_terms == "Net 30"


def test_empty_and_odd_text_reads_as_nothing() -> None:
    for text in ("", "   \n\n", "between and", "(\u201cX\u201d) (\u201cY\u201d)", "x" * 5000):
        contract, fields = read(text)
        assert contract.parties == [] and contract.governing_law is None
        assert all(0 <= v <= 1 for v in fields.values())


# --------------------------------------------------- what the first held-out round taught


def test_a_term_after_a_successors_clause_and_an_abbreviation_that_is_no_role() -> None:
    contract, _ = read(
        "THIS AGENCY AGREEMENT, dated November 9, 2005 (\u201cAgreement\u201d), between "
        "General Electric Capital Corporation, a Delaware corporation (together with its "
        "successors and assigns, if any, \u201cLessor\u201d), and Duckwall-Alco Stores, Inc., "
        "a registered Non-banking Financial Company (NBFC) in Kansas (the \u201cCompany\u201d). "
        "RECITALS: WHEREAS, Lessor leases equipment."
    )
    assert names_and_roles(contract) == [
        ("General Electric Capital Corporation", "Lessor"),
        ("Duckwall-Alco Stores, Inc.", "Company"),
    ]


def test_party_blocks_joined_by_and_colon_and_a_greek_question_mark() -> None:
    contract, _ = read(
        "PHOTO RETOUCHING OUTSOURCING AGREEMENT Between: DGT Corp. Suite 207 - 1130 Austin "
        "Avenue, Coquitlam (hereinafter referred to as \u201cDGT\u201d) And: Dolphin Industries "
        "Limited Room 1302 Golden Gate Commercial Bldg (hereinafter referred to as "
        "\u201cDolphin\u201d) WHEREAS: DGT is an internet provider."
    )
    assert names_and_roles(contract) == [
        ("DGT Corp.", "DGT"),
        ("Dolphin Industries Limited", "Dolphin"),
    ]
    # U+037E looks like a semicolon and is one after NFKC
    contract, _ = read(
        "This Service Agreement is entered into by and between: PC Financial Services "
        "Private Limited, a India company (\u201cPC Financial\u201d)\u037e and Mobimagic Co., "
        "Ltd., a company Incorporated in China (\u201cMobimagic\u201d). In consideration"
    )
    assert [name for name, _ in names_and_roles(contract)] == [
        "PC Financial Services Private Limited",
        "Mobimagic Co., Ltd.",
    ]


def test_what_follows_the_term_by_mutual_agreement_is_no_renewal() -> None:
    contract, _ = read(
        "3. Term. Subject to the provisions for termination hereinafter provided, the term "
        "of this Agreement shall commence on the date hereof and shall continue for a "
        "minimum period of 12 months (the \u201cMinimum Period\u201d) and thereafter upon the "
        "mutual agreement of the Company and Maimon."
    )
    assert contract.term_months == 12 and contract.renewal.auto_renew is False


def test_signed_in_a_clause_is_not_the_signature_block() -> None:
    filler = "The Product shall be delivered with its certificate of analysis. " * 20
    contract, _ = read(
        "SUPPLY AGREEMENT between CREMER OLEO GmbH & Co KG (\u201cCremer\u201d) and Ultragenyx "
        "Pharmaceutical Inc (\u201cUltragenyx\u201d). Preamble. " + filler + "This Agreement "
        "shall become effective on the date of its execution. No modification is valid "
        "unless signed by the Parties. This Agreement supersedes all prior agreements "
        "except the Confidentiality Agreement between the parties dated September 26th, "
        "2012. Hamburg, November 19th, 2012 /s/ Thomas Kassberg /s/ R. Stephan"
    )
    assert contract.effective_date == datetime.date(2012, 11, 19)


def test_a_german_contract_is_classified_as_one() -> None:
    text = (
        "DIENSTLEISTUNGSVERTRAG Dieser Dienstleistungsvertrag wird geschlossen zwischen "
        "Acme GmbH (Auftragnehmer) und Beta Corp. (Auftraggeber). Der Auftraggeber zahlt "
        "10 000 USD pro Kalendermonat. Laufzeit und K\u00fcndigung: Jede Partei kann diesen "
        "Vertrag mit 30 Tagen schriftlicher K\u00fcndigungsfrist beenden. Anwendbares Recht: "
        "Dieser Vertrag unterliegt dem Recht des Bundesstaates Delaware. Gesamtvereinbarung: "
        "Dieser Vertrag ersetzt alle fr\u00fcheren Abreden der Parteien."
    )
    assert classify(DocumentText(pages=[PageText(1, text, True, len(text))])) == "contract"


def test_a_french_contract() -> None:
    # written here in the style of a French services contract (no real one is public
    # under a licence we could find), to keep the French vocabulary honest
    contract, _ = read(
        "CONTRAT DE PRESTATION DE SERVICES ENTRE LES SOUSSIGNÉS : Atelier Durand SARL, "
        "société à responsabilité limitée, dont le siège social est situé 4 rue des "
        "Lilas, 69003 Lyon, ci-après dénommée \u00ab le Prestataire \u00bb, D'UNE PART, ET "
        "Boulangerie Martin SAS, société par actions simplifiée, ci-après dénommée "
        "\u00ab le Client \u00bb, D'AUTRE PART. Article 1 - Durée. Le présent contrat prend "
        "effet le 1er janvier 2025 pour une durée de 12 mois. Il est renouvelé par tacite "
        "reconduction, sauf dénonciation au moins 60 jours avant son terme. Article 2 - "
        "Paiement. Les factures sont payables dans un délai de 30 jours à compter de leur "
        "réception. Article 3. Le présent contrat est régi par le droit français."
    )
    assert names_and_roles(contract) == [
        ("Atelier Durand SARL", "Prestataire"),
        ("Boulangerie Martin SAS", "Client"),
    ]
    assert contract.effective_date == datetime.date(2025, 1, 1)
    assert contract.term_months == 12
    assert contract.renewal.auto_renew is True and contract.renewal.notice_days == 60
    assert contract.payment_terms == "Net 30" and contract.governing_law == "France"


def test_the_term_clause_may_say_when_the_agreement_takes_effect() -> None:
    preamble = (
        "This Agreement is made between Acme Ltd (\u201cSeller\u201d) and Globex Inc. "
        "(\u201cBuyer\u201d). "
    )
    contract, fields = read(
        preamble
        + "WHEREAS, the Seller makes widgets. " * 60
        + "2. Term. This Agreement shall become effective on January 1, 2021 and continue "
        "for three (3) years. The price list dated March 3, 2020 is effective on April 1, "
        "2020."
    )
    assert contract.effective_date == datetime.date(2021, 1, 1)
    assert fields["effective_date"] < 0.95  # past the preamble: likely, not sure
    assert contract.term_months == 36


def test_the_notice_is_the_days_said_to_be_notice_not_the_renewal_period() -> None:
    contract, _ = read(
        "This Agreement renews automatically for successive thirty (30) day periods unless "
        "either party gives notice at least ten (10) days prior to the end of the "
        "then-current term."
    )
    assert contract.renewal.auto_renew is True and contract.renewal.notice_days == 10


def test_renewals_and_extensions_of_other_things_are_not_the_agreements() -> None:
    for text in (
        "The Seller shall deliver widgets. Any extension of time for performance shall "
        "require the written consent of both parties.",
        "The Seller shall carry insurance. The insurer shall not renew such coverage "
        "without 30 days' notice to the Company.",
    ):
        contract, fields = read(text)
        assert contract.renewal.auto_renew is None and fields["renewal.auto_renew"] < 0.9


def test_a_law_named_by_its_adjective() -> None:
    for text, law in (
        ("This Agreement is governed by English law.", "England"),
        ("Dieser Vertrag unterliegt deutschem Recht.", "Germany"),
        ("Le présent contrat est régi par le droit français.", "France"),
        ("This Agreement shall be governed by Klingon law.", None),
    ):
        assert read(text)[0].governing_law == law, text


def test_a_date_right_after_effective_and_a_term_from_date_to_date() -> None:
    contract, _ = read(
        'This Supply Agreement is made between Acme Ltd ("Seller") and Globex Inc. '
        '("Buyer"), effective January 1, 2020. This Agreement shall commence on January 1, '
        "2020 and end on December 31, 2020. Invoices are due 30 days from the invoice date."
    )
    assert contract.effective_date == datetime.date(2020, 1, 1)
    assert contract.term_months == 12
    assert contract.payment_terms == "Net 30"


def test_what_the_second_held_out_round_taught() -> None:
    # "made by" the parties; a law whose "state" is not capitalised; single quotes
    contract, _ = read(
        "MAINTENANCE AGREEMENT (this \u201cAgreement\u201d), dated as of July 23, 2003, made by "
        "Universal Access, Inc., a corporation organized and existing under the laws of the "
        "State of Delaware (the \u201cCompany\u201d), and CityNet Telecommunications, Inc., a "
        "corporation organized and existing under the laws of the State of Delaware (the "
        "'Provider'). WITNESSETH: WHEREAS, the parties agree. All questions of this "
        "Agreement shall be governed by the laws of the state of New York."
    )
    assert names_and_roles(contract) == [
        ("Universal Access, Inc.", "Company"),
        ("CityNet Telecommunications, Inc.", "Provider"),
    ]
    assert contract.governing_law == "state of New York"
    # a party the preamble does not name is not named after its placeholder
    contract, _ = read(
        'This "Agency" Agreement is made as of March 29, 1999, by and between Biopure '
        'Corporation, a Delaware corporation (the "Company") and the Agent named on the '
        'signature page hereof (the "Agent"). WHEREAS, the Company makes products.'
    )
    assert all("signature" not in (p.name or "") for p in contract.parties)
    # "the sooner of six (6) months ... or replacement": six months at most
    contract, _ = read(
        "7.1. Term. The initial term of this Agreement shall be the sooner of six (6) months "
        "from the Effective Date, or replacement of this Agreement with a subsequent one."
    )
    assert contract.term_months == 6


def test_a_text_printed_over_and_over_is_not_all_footer() -> None:
    page = (
        "This Agreement is made between Acme Ltd (\u201cSeller\u201d) and Globex Inc. "
        "(\u201cBuyer\u201d).\nThe initial term of this Agreement is 24 months.\n"
        "This Agreement is governed by the laws of the State of Ohio.\n"
    )
    contract, _ = read("\n\n".join([page] * 50))  # every line repeats: none is a footer
    assert contract.term_months == 24 and contract.governing_law == "State of Ohio"
    assert [p.name for p in contract.parties] == ["Acme Ltd", "Globex Inc."]


def test_a_party_named_only_on_the_signature_page() -> None:
    filler = "The Agent shall promote the Products in the Territory. " * 30
    contract, fields = read(
        'This "Agency" Agreement is made as of March 29, 1999, by and between Biopure '
        'Corporation, a Delaware corporation (the "Company") and the Agent named on the '
        'signature page hereof (the "Agent"). WHEREAS, the Company makes products. '
        + filler
        + "Signed, sealed and delivered as of the date first written above. THE BUTLER "
        "COMPANY BIOPURE CORPORATION By: By: Andrew W. Wright, Title: Vice President"
    )
    assert names_and_roles(contract) == [
        ("Biopure Corporation", "Company"),
        ("THE BUTLER COMPANY", "Agent"),
    ]
    assert fields["parties"] < 0.9  # read off the signatures: a guess
