"""Bank codes an invoice prints that are not its own fields, recognised by their check
digits rather than by where they stand: an account (IBAN) at the head of a payee's
block is not the payee's name, and a payment reference (ISO 11649 "RF..." or a Swiss
27-digit QR reference) behind a "Reference" label is not the invoice's number.

The check digits make each reading sure: a random token passes ISO 7064 mod 97-10 once
in 97, the recursive mod 10 once in 10, and both also need the code's length and shape.
"""

from __future__ import annotations

import re

_IBAN = re.compile(r"^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$")
_CREDITOR_REFERENCE = re.compile(r"^RF\d{2}[A-Z0-9]{1,21}$")
_QR_REFERENCE = re.compile(r"^\d{27}$")
# The table of the recursive mod 10 check (Swiss payment references, ESR/QR).
_MOD10_TABLE = (0, 9, 4, 6, 8, 2, 7, 1, 3, 5)


def _compact(text: str) -> str:
    return re.sub(r"[\s.-]", "", text.strip()).upper()


def _mod97(code: str) -> bool:
    """ISO 7064 mod 97-10 as IBANs and creditor references use it: the first four
    characters moved to the end, letters as 10-35, the number mod 97 is 1."""
    moved = code[4:] + code[:4]
    digits = "".join(str(int(ch, 36)) for ch in moved)
    return int(digits) % 97 == 1


def is_iban(text: str) -> bool:
    """Whether `text` is one IBAN, grouped by spaces or not ("CH93 0076 2011 6238 5295 7")."""
    code = _compact(text)
    return bool(_IBAN.match(code)) and _mod97(code)


def is_payment_reference(text: str) -> bool:
    """Whether `text` is one structured payment reference: an ISO 11649 creditor
    reference ("RF18 5390 0754 7034") or a 27-digit reference with its recursive mod 10
    check digit last."""
    code = _compact(text)
    if _CREDITOR_REFERENCE.match(code):
        return _mod97(code)
    if _QR_REFERENCE.match(code):
        carry = 0
        for digit in code[:-1]:
            carry = _MOD10_TABLE[(carry + int(digit)) % 10]
        return (10 - carry) % 10 == int(code[-1])
    return False
