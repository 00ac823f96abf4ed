"""The per-agent correction of token estimates (conveyor.llm.estimates), by itself."""

from __future__ import annotations

from typing import Any

from conveyor.llm.estimates import Correction, from_attempts, theil_sen


def test_a_line_fits_what_a_single_ratio_cannot() -> None:
    # As measured with llama.cpp: a fixed part counted that is never sent (the schema),
    # and a per-character rate above the rule of thumb's: short documents overestimated,
    # long ones under.
    correction = Correction()
    pairs = [(e, 1.4 * e - 1500) for e in (1600, 1800, 2000, 2400, 2800, 3000)]
    for estimate, actual in pairs:
        correction.learn(estimate, round(actual))
    for estimate, actual in pairs:
        assert abs(correction.apply(estimate) - actual) <= 1
    ratio = theil_sen([(e, round(a)) for e, a in pairs]).ratio
    assert abs(1600 * ratio - 740) > 0.3 * 740  # the median ratio misses the short one


def test_one_long_answer_does_not_move_the_line() -> None:
    correction = Correction()
    for estimate in (1000, 1200, 1400, 1600, 1800):
        correction.learn(estimate, estimate // 2)
    correction.learn(1500, 9000)  # a long table of line items
    fit = correction.fit
    assert fit is not None and abs(fit.slope - 0.5) < 0.01
    assert abs(correction.apply(1500) - 750) <= 10


def test_beyond_the_estimates_learnt_the_larger_of_line_and_scaling() -> None:
    correction = Correction()
    for estimate in (1500, 1700, 1900):
        correction.learn(estimate, 2 * estimate - 2800)  # 200, 600, 1000
    # Above: the line extended (2 x 5,000 - 2,800) is more than its end scaled.
    assert correction.apply(5000) == 2 * 5000 - 2800
    # Below: the line would fall to nothing; the end's value scaled is more.
    assert correction.apply(1000) == -(-200 * 1000 // 1500)
    rising = Correction()
    for estimate in (1500, 1700, 1900):
        rising.learn(estimate, estimate // 2 + 500)  # a positive intercept
    # Above, now the scaling is more: a long document is not reserved below its share.
    assert rising.apply(19_000) == -(-1450 * 19_000 // 1900)


def test_too_few_or_no_spread_falls_back_as_it_should() -> None:
    correction = Correction()
    correction.learn(1000, 500)
    correction.learn(1000, 600)
    assert correction.fit is None and correction.apply(1000) == 1000  # too few to learn
    correction.learn(1000, 5000)  # every estimate the same (pages only): the median ratio
    assert correction.apply(1000) == 600 and correction.apply(2000) == 1200
    correction.learn(0, 100)  # no estimate: nothing to learn
    assert correction.samples == 3


async def test_a_correction_seeded_from_attempts_estimates_from_every_field_read() -> None:
    """from_attempts gives the estimator every payload field its query reads: an estimate
    made from fewer fields than the live one would teach a line of other estimates."""

    class Rows:
        async def fetchall(self) -> list[dict[str, Any]]:  # newest first, as the query
            return [
                {"chars": 900, "pages": 1, "item_rows": 2, "actual": 1100},
                {"chars": 700, "pages": 1, "item_rows": None, "actual": 900},
                {"chars": 500, "pages": 1, "item_rows": 9, "actual": 700},
            ]

    class Conn:
        async def execute(self, query: str, params: dict[str, Any]) -> Rows:
            assert params == {"agent": "invoice", "limit": 50}
            return Rows()

    seen: list[dict[str, Any]] = []

    def estimate(payload: dict[str, Any]) -> int:
        seen.append(payload)
        return int(payload["chars"])

    correction = await from_attempts(Conn(), "invoice", estimate)
    assert [p.get("item_rows") for p in seen] == [9, None, 2]  # oldest first
    assert all("actual" not in p for p in seen)
    assert correction.samples == 3 and correction.apply(800) == 1000
