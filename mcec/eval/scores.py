"""Pass rate, pass@k, pass^k, and what got worse than a baseline.

A run *passes* when the pipeline ended in ``Ok``, every assertion (a ``bool`` result) is
true and no evaluator failed; scores and labels are shown, not judged.

With ``n`` runs of a case of which ``c`` passed:

- **pass@k** — the probability that at least one of ``k`` runs drawn from the ``n`` passes,
  the unbiased estimator of the Codex paper (Chen et al., 2021):
  ``1 - C(n-c, k) / C(n, k)``;
- **pass^k** — the probability that all ``k`` drawn runs pass (τ-bench, Yao et al., 2024):
  ``C(c, k) / C(n, k)``.

Both are averaged over the cases; with ``k = 1`` both are the pass rate ``c / n``.
"""

from __future__ import annotations

from math import comb

__all__ = ["pass_at_k", "pass_hat_k"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k of a case with ``c`` of ``n`` runs passed (``1 ≤ k ≤ n``)."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of a case with ``c`` of ``n`` runs passed (``1 ≤ k ≤ n``)."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 ≤ c ≤ n and 1 ≤ k ≤ n, not n={n}, c={c}, k={k}")
