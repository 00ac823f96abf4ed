"""A logistic model as the learned choosers ship it: the weights scikit-learn fitted,
exported to JSON by name (benchmarks/train_sums.py, train_number.py, train_parties.py,
train_items.py), scored here as a dot product, so that the reader never imports
scikit-learn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Model:
    """One role's weights (the number, a party, an item row), one per feature name."""

    weights: list[float]


def model_of(entry: Mapping[str, Any], order: Sequence[str]) -> Model:
    """A model from its JSON entry ({"features": names, "coef": weights}), in `order`."""
    return Model(aligned(entry["features"], entry["coef"], order))


def aligned(names: Sequence[str], coef: Sequence[float], order: Sequence[str]) -> list[float]:
    """The weights `coef` of the features `names`, in the order of `order`; a feature the
    file does not name (added since it was trained) weighs nothing."""
    by_name = dict(zip(names, coef, strict=True))
    return [float(by_name.get(name, 0.0)) for name in order]


def score(weights: Sequence[float], vector: Sequence[float]) -> float:
    """The log-odds without the intercept: the weighted sum of a candidate's features."""
    return sum(w * x for w, x in zip(weights, vector, strict=True))
