"""Rényi-DP accounting of T Poisson-subsampled Gaussian mechanisms, with the classic and the improved conversion.

The RDP of one Poisson-subsampled Gaussian mechanism (sampling rate q, noise multiplier σ, add/remove, sensitivity 1)
at order α is dp-accounting's (``dp_accounting.rdp.RdpAccountant``, Mironov, Talwar & Zhang 2019, "Rényi Differential
Privacy of the Sampled Gaussian Mechanism"); T compositions add up: RDP_T(α) = T·RDP_1(α). With q = 1 it is the
Gaussian mechanism's α/(2σ²) exactly. An (ε, δ) guarantee is read off the curve by one of two conversions:

* ``"classic"`` — Mironov (2017), Proposition 3: ε = min_α [RDP(α) + log(1/δ)/(α − 1)];
* ``"improved"`` — Balle et al. (2020), Theorem 21; Canonne, Kamath & Steinke (2020), Proposition 12:
  ε = min_α [RDP(α) + log((α − 1)/α) − (log δ + log α)/(α − 1)] — always below the classic one at the same
  α (what dp-accounting's ``RdpAccountant.get_epsilon`` and Opacus' ``get_privacy_spent`` implement).

Both are upper bounds on the ε of the same mechanism that dp-accounting's PLD
(:func:`hsaudit.accounting.gaussian.gaussian_epsilon`) bounds much more tightly; they are here because papers report
RDP numbers and a reproduction has to say which accountant a printed ε came from (docs/steinke.md).

The minimum is over a finite grid of orders, itself a choice: :data:`INTEGER_ORDERS` (2, 3, …, 256; the default) or
Opacus' default grid :data:`OPACUS_ORDERS` (1.1, 1.2, …, 10.9, then 12, …, 63). At fractional orders dp-accounting
sums the absolute values of the binomial series of A_α (``_compute_log_a_frac``), an upper bound on the exact RDP that
Opacus' signed sum computes (e.g. q = 256/50,000, σ = 0.718, α = 2.7: 2.2395e−4 against 2.2327e−4, the value a
numerical integral gives); at integer orders the two libraries agree. An optimum at either end of the grid means a
wider grid could give a smaller ε: it is reported through ``warnings.warn``.

This module uses numpy and dp-accounting only (no torch).
"""

from __future__ import annotations

import functools
import logging
import math
import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

Conversion = Literal["classic", "improved"]

#: The conversions from RDP to (ε, δ) (module docstring).
CONVERSIONS: tuple[str, ...] = ("classic", "improved")

#: The default orders: the integers 2, 3, …, 256 (where every library's subsampled-Gaussian RDP is exact).
INTEGER_ORDERS: tuple[float, ...] = tuple(float(a) for a in range(2, 257))

#: Opacus' default orders (``RDPAccountant.DEFAULT_ALPHAS``, Opacus 1.x): 1.1, 1.2, …, 10.9, then 12, 13, …, 63.
OPACUS_ORDERS: tuple[float, ...] = tuple([1 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(12, 64)])


def _check_orders(orders: npt.ArrayLike) -> np.ndarray:
    a = np.asarray(orders, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"orders must be a non-empty 1-D sequence, got shape {a.shape}")
    if not (np.all(np.isfinite(a)) and np.all(a > 1.0)):
        raise ValueError(f"orders must be finite and > 1, got min {a.min()}")
    return a


def _check_delta(delta: float) -> float:
    d = float(delta)
    if not 0.0 < d < 1.0:  # also rejects NaN
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return d


@functools.lru_cache(maxsize=256)
def _rdp_cached(sigma: float, t: int, q: float, orders: tuple[float, ...]) -> np.ndarray:
    from dp_accounting import dp_event
    from dp_accounting.rdp import RdpAccountant

    accountant = RdpAccountant(orders=list(orders))
    event = dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma))
    absl = logging.getLogger("absl")  # dp-accounting logs each fractional order whose series does not converge
    level = absl.level
    absl.setLevel(logging.ERROR)
    try:
        accountant.compose(dp_event.SelfComposedDpEvent(event, t))
    finally:
        absl.setLevel(level)
    rdp = accountant.rdp
    rdp.setflags(write=False)
    return rdp


def subsampled_gaussian_rdp(
    *,
    noise_multiplier: float,
    compositions: int,
    sampling_rate: float = 1.0,
    orders: Sequence[float] = INTEGER_ORDERS,
) -> np.ndarray:
    """RDP(α) of T compositions of the Poisson-subsampled Gaussian mechanism, at every order (dp-accounting).

    Args:
        noise_multiplier: σ (> 0), the noise standard deviation over the sensitivity.
        compositions: T ≥ 0 (0 gives zeros).
        sampling_rate: q in [0, 1] (0 gives zeros; 1 gives T·α/(2σ²)).
        orders: the orders α (> 1).

    Returns:
        RDP values aligned with ``orders`` (read-only; inf where dp-accounting's fractional-order series did not
        converge, which :func:`rdp_to_epsilon` skips).

    Raises:
        ValueError: a parameter out of range (named).

    >>> float(subsampled_gaussian_rdp(noise_multiplier=2.0, compositions=10, orders=[3])[0])  # 10·3/(2·4)
    3.75
    """
    sigma = float(noise_multiplier)
    if not (math.isfinite(sigma) and sigma > 0.0):
        raise ValueError(f"noise_multiplier must be positive and finite, got {noise_multiplier}")
    if isinstance(compositions, bool) or int(compositions) != compositions or compositions < 0:
        raise ValueError(f"compositions must be a non-negative integer, got {compositions!r}")
    q = float(sampling_rate)
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"sampling_rate must be in [0, 1], got {sampling_rate}")
    a = _check_orders(orders)
    if int(compositions) == 0 or q == 0.0:
        return np.zeros_like(a)
    return _rdp_cached(sigma, int(compositions), q, tuple(a.tolist()))


def rdp_to_epsilon(
    rdp: npt.ArrayLike, *, orders: Sequence[float], delta: float, conversion: Conversion = "classic"
) -> tuple[float, float]:
    """ε at δ of an RDP curve, minimised over its orders, and the optimal order.

    Args:
        rdp: RDP(α), aligned with ``orders`` (inf entries are skipped).
        orders: the orders α (> 1).
        delta: δ in (0, 1).
        conversion: ``"classic"`` (Mironov 2017, Prop. 3: RDP(α) + log(1/δ)/(α − 1)) or ``"improved"`` (Balle et
            al. 2020, Thm. 21: RDP(α) + log((α − 1)/α) − (log δ + log α)/(α − 1)).

    Returns:
        ``(ε, α*)`` with ε ≥ 0 (clipped at 0); ``(inf, nan)`` when every order's RDP is infinite. An optimum at the
        smallest or largest of several orders is warned about (a wider grid might give a smaller ε).

    Raises:
        ValueError: mismatched lengths, orders ≤ 1, δ outside (0, 1), negative RDP or an unknown conversion.

    >>> round(rdp_to_epsilon([0.5], orders=[2.0], delta=math.exp(-4))[0], 6)  # 0.5 + 4/(2 − 1)
    4.5
    """
    a = _check_orders(orders)
    r = np.asarray(rdp, dtype=float)
    d = _check_delta(delta)
    if r.shape != a.shape:
        raise ValueError(f"rdp and orders must have the same length, got {r.shape} and {a.shape}")
    if np.any(np.isnan(r)) or np.any(r < 0):
        raise ValueError("rdp must be non-negative (inf allowed), got a negative or NaN value")
    if conversion == "classic":
        eps = r + math.log(1.0 / d) / (a - 1.0)
    elif conversion == "improved":
        eps = r + np.log1p(-1.0 / a) - (math.log(d) + np.log(a)) / (a - 1.0)
    else:
        raise ValueError(f"conversion must be one of {CONVERSIONS}, got {conversion!r}")
    ok = np.isfinite(eps)
    if not ok.any():
        return math.inf, math.nan
    i = int(np.argmin(np.where(ok, eps, np.inf)))
    if ok.sum() > 1 and a[i] in (a[ok].min(), a[ok].max()):
        end = "smallest" if a[i] == a[ok].min() else "largest"
        warnings.warn(
            f"the optimal RDP order {a[i]:g} is the {end} of the grid; a wider grid of orders may give a smaller "
            "epsilon",
            stacklevel=2,
        )
    return max(0.0, float(eps[i])), float(a[i])


def rdp_epsilon(
    *,
    noise_multiplier: float,
    compositions: int,
    delta: float,
    sampling_rate: float = 1.0,
    orders: Sequence[float] = INTEGER_ORDERS,
    conversion: Conversion = "classic",
) -> float:
    """ε at δ of T (Poisson-subsampled) Gaussian compositions under RDP (an upper bound; module docstring).

    Args:
        noise_multiplier: σ (> 0).
        compositions: T ≥ 0.
        delta: δ in (0, 1).
        sampling_rate: q in [0, 1].
        orders: the grid of orders α (> 1); default the integers 2..256 (:data:`INTEGER_ORDERS`).
        conversion: ``"classic"`` or ``"improved"`` (:func:`rdp_to_epsilon`).

    Returns:
        ε ≥ 0; T = 0 or q = 0 gives 0 (no privacy loss: the conversions' log(1/δ) terms would not vanish).

    Raises:
        ValueError: a parameter out of range (named).

    The paper-scale rows of Steinke, Nasr et al.'s Table 2 (q = B/50,000, δ = 1e−5, integer orders):

    >>> round(rdp_epsilon(noise_multiplier=3.0, compositions=2468, delta=1e-5, sampling_rate=4096 / 50000), 2)
    7.8
    """
    d = _check_delta(delta)
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion must be one of {CONVERSIONS}, got {conversion!r}")
    rdp = subsampled_gaussian_rdp(
        noise_multiplier=noise_multiplier, compositions=compositions, sampling_rate=sampling_rate, orders=orders
    )
    if int(compositions) == 0 or float(sampling_rate) == 0.0:
        return 0.0
    return rdp_to_epsilon(rdp, orders=orders, delta=d, conversion=conversion)[0]


__all__ = [
    "CONVERSIONS",
    "Conversion",
    "INTEGER_ORDERS",
    "OPACUS_ORDERS",
    "rdp_epsilon",
    "rdp_to_epsilon",
    "subsampled_gaussian_rdp",
]
