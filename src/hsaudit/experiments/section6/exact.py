"""The exact law of the Section 6 process (density propagation on a grid) and its privacy profile.

Our addition to Cebere et al. Section 6 (docs/section6.md, "Exact law"): the process is a 1-D Markov chain, so
the law of θ_t in both worlds is propagated exactly on a grid (:func:`exact_laws`); from the two cell-mass
vectors follow the exact privacy profile δ(ε) = max(Σ(p̄ − e^ε p)₊, Σ(p − e^ε p̄)₊) (:func:`density_privacy_profile`),
the exact ε of the last iterate at every step (:func:`exact_epsilons`, :func:`exact_epsilon_curve`), the
R → ∞ limit of the paper's audit (:func:`threshold_mu_limit`), the exact trade-off curve
(:func:`exact_tradeoff`) and the accounting upper bound of the process (:func:`upper_bound_epsilon`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.experiments.section6.process import Process


@dataclass(frozen=True)
class ExactLaw:
    """Cell masses of θ_t in both worlds on a regular grid.

    Attributes:
        centers: cell centres (length n); the switch point h is a cell edge.
        dx: cell width (C/dx is an integer, so the ±C drift is an exact shift).
        p: masses of θ_t (not inserted), shape (T, n).
        pbar: masses of θ̄_t (inserted), shape (T, n).
        lost: mass that left the grid by step t (max over the two worlds), shape (T,).
    """

    centers: np.ndarray
    dx: float
    p: np.ndarray
    pbar: np.ndarray
    lost: np.ndarray


def exact_laws(
    process: Process, *, cells_per_clip: int = 50, cells_per_sd: int = 25, extent_sds: float = 10.0
) -> ExactLaw:
    """Propagate the exact law of θ_t (both worlds) on a grid (Cebere et al. Eq. 3; our addition).

    Step 1 is N(0, σ²C²) or N(C, σ²C²) integrated over each cell. Each further step splits the masses at h
    (h is a cell edge), shifts each part by ±C (an integer number of cells) and convolves with the
    cell-integrated N(0, (σC/B)²) kernel by FFT. The grid covers h ± (T·C + extent_sds·σC·√(1 + (T−1)/B²)):
    the drift moves θ by at most C per step and the accumulated noise has that standard deviation, so the mass
    that leaves the grid is below 2Φ(−extent_sds) (≈ 1.5e−23 for 10 sds) — it is tracked in ``lost``.

    Discretisation: masses sit at cell centres between steps. The cell width is C/k with
    k = max(cells_per_clip, ⌈cells_per_sd·B/σ⌉), i.e. at least ``cells_per_sd`` cells per noise standard
    deviation; the resulting ε error is checked against the closed form at t = 1 in the tests.

    Args:
        process: the process (a finite switch point is required).
        cells_per_clip: minimum number of cells per C.
        cells_per_sd: minimum number of cells per standard deviation σC/B of the per-step noise.
        extent_sds: half-width of the grid beyond the maximal drift, in accumulated-noise standard deviations.

    Returns:
        An :class:`ExactLaw`.
    """
    if not np.isfinite(process.h):
        raise ValueError(f"exact_laws needs a finite switch point, got {process.switch_point}")
    for name, value, low in (("cells_per_clip", cells_per_clip, 1), ("cells_per_sd", cells_per_sd, 1)):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value}")
    if not extent_sds > 0:
        raise ValueError(f"extent_sds must be > 0, got {extent_sds}")
    c, sigma, b, steps, h = process.clip_norm, process.sigma, process.batch_size, process.steps, process.h
    k = max(int(cells_per_clip), math.ceil(cells_per_sd * b / sigma))
    dx = c / k
    acc_sd = sigma * c * math.sqrt(1.0 + (steps - 1) / b**2)
    half = steps * c + abs(h) + c + extent_sds * acc_sd
    cells = math.ceil(half / dx)
    edges = h + dx * np.arange(-cells, cells + 1, dtype=np.float64)
    centers = 0.5 * (edges[:-1] + edges[1:])
    n = centers.size
    above = np.arange(n) >= cells  # cells in (h, ∞)
    noise_sd = sigma * c / b
    radius = math.ceil(extent_sds * noise_sd / dx) + 1
    kernel = _gauss_cell_masses(dx * (np.arange(-radius, radius + 2) - 0.5), 0.0, noise_sd)
    shift_up = k if process.rule == "divergent" else -k  # cells above h move by +C (divergent) or −C
    p = np.empty((steps, n))
    pbar = np.empty((steps, n))
    from scipy import signal  # here, not at module level: it costs every Monte Carlo audit job 0.5 s to import

    lost = np.zeros(steps)
    for world, start in ((p, 0.0), (pbar, c)):
        cur = _gauss_cell_masses(edges, start, sigma * c)
        world[0] = cur
        lost[0] = max(lost[0], 1.0 - cur.sum())
        for t in range(1, steps):
            moved = np.zeros(n)
            _shift_add(moved, np.where(above, cur, 0.0), shift_up)
            _shift_add(moved, np.where(above, 0.0, cur), -shift_up)
            cur = signal.fftconvolve(moved, kernel, mode="same")
            np.maximum(cur, 0.0, out=cur)  # FFT round-off (~1e-17) can be slightly negative
            world[t] = cur
            lost[t] = max(lost[t], 1.0 - cur.sum())
    lost = np.maximum.accumulate(np.maximum(lost, 0.0))
    return ExactLaw(centers=centers, dx=dx, p=p, pbar=pbar, lost=lost)


def _shift_add(out: np.ndarray, x: np.ndarray, shift: int) -> None:
    """out += x shifted by ``shift`` cells (mass shifted off the grid is dropped)."""
    if shift > 0:
        out[shift:] += x[:-shift]
    elif shift < 0:
        out[:shift] += x[-shift:]
    else:
        out += x


def _gauss_cell_masses(edges: np.ndarray, mean: float, sd: float) -> np.ndarray:
    """Mass of N(mean, sd²) in each cell [edges[i], edges[i+1]], accurate in both tails."""
    z = (np.asarray(edges) - mean) / sd
    lo, hi = z[:-1], z[1:]
    left = special.ndtr(hi) - special.ndtr(lo)
    right = special.ndtr(-lo) - special.ndtr(-hi)
    return np.where(0.5 * (lo + hi) < 0, left, right)


def density_privacy_profile(p: npt.ArrayLike, pbar: npt.ArrayLike, epsilons: npt.ArrayLike) -> np.ndarray:
    """Exact privacy profile δ(ε) = max(H_{e^ε}(P̄‖P), H_{e^ε}(P‖P̄)), H_γ(Q‖R) = Σ max(0, Q − γR).

    Args:
        p, pbar: cell masses of the two laws (same grid).
        epsilons: ε values (≥ 0).

    Returns:
        δ at each ε.
    """
    prof = _Profile(np.asarray(p, dtype=float), np.asarray(pbar, dtype=float))
    return np.array([prof.delta(float(e)) for e in np.atleast_1d(epsilons)])


def exact_epsilon(p: npt.ArrayLike, pbar: npt.ArrayLike, *, delta: float) -> float:
    """The smallest ε with δ(ε) ≤ ``delta`` for the laws ``p`` and ``pbar`` (0 if TV ≤ δ; inf if never)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    prof = _Profile(np.asarray(p, dtype=float), np.asarray(pbar, dtype=float))
    if prof.delta(0.0) <= delta:
        return 0.0
    hi = 1.0
    while prof.delta(hi) > delta:
        hi *= 2.0
        if hi > 1e4:
            return math.inf
    return float(optimize.brentq(lambda e: prof.delta(e) - delta, 0.0, hi, xtol=1e-10, rtol=1e-12))


class _Profile:
    """δ(ε) of two discrete laws in O(log n) per ε after one sort per direction."""

    def __init__(self, p: np.ndarray, pbar: np.ndarray) -> None:
        if p.shape != pbar.shape:
            raise ValueError(f"p and pbar must have the same shape, got {p.shape} and {pbar.shape}")
        self._dirs = [self._prepare(pbar, p), self._prepare(p, pbar)]

    @staticmethod
    def _prepare(q: np.ndarray, r: np.ndarray):
        keep = q > 0
        q, r = q[keep], r[keep]
        with np.errstate(divide="ignore"):
            loss = np.log(q) - np.log(r)  # +inf where r = 0
        order = np.argsort(-loss, kind="stable")
        loss = loss[order]
        return -loss, np.cumsum(q[order]), np.cumsum(r[order])  # ascending −loss for searchsorted

    def delta(self, eps: float) -> float:
        out = 0.0
        for neg_loss, cq, cr in self._dirs:
            i = int(np.searchsorted(neg_loss, -eps, side="left"))  # number of cells with loss > ε
            if i:
                out = max(out, cq[i - 1] - math.exp(eps) * cr[i - 1])
        return max(out, 0.0)


def threshold_mu_limit(p: npt.ArrayLike, pbar: npt.ArrayLike, *, floor: float = 1e-6) -> float:
    """The R → ∞ limit of the paper audit's μ̂ on the laws ``p`` (not inserted) and ``pbar`` (inserted):
    max over thresholds τ on θ (cell edges) of Φ⁻¹(1 − FPR(τ)) − Φ⁻¹(FNR(τ)), with the exact error rates
    FPR = P(θ > τ), FNR = P̄(θ ≤ τ) in place of Clopper–Pearson bounds.

    Thresholds where FPR or FNR is below ``floor`` (default 10⁻⁶, i.e. about one run in R = 10⁶) are skipped:
    an audit with R runs per world cannot resolve them, and grid masses far below carry FFT round-off. For
    laws whose threshold-μ keeps growing into the tails the value depends on ``floor``. Its GDP ε is what the Monte Carlo audit converges to; the gap to the exact
    ε is the error of the Gaussian trade-off assumption, the gap to ε̂ the audit's statistical slack.
    """
    p = np.asarray(p, dtype=float)
    pbar = np.asarray(pbar, dtype=float)
    fpr = np.cumsum(p[::-1])[::-1][1:]  # mass strictly above the upper edge of cell j
    fnr = np.cumsum(pbar)[:-1]  # inserted mass at or below it
    ok = (fpr >= floor) & (fnr >= floor)
    if not ok.any():
        return -math.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = -special.ndtri(fpr[ok]) - special.ndtri(fnr[ok])
    return float(np.max(mu))


def exact_epsilons(law: ExactLaw, *, delta: float) -> np.ndarray:
    """Exact ε(δ) of the last iterate θ_t vs θ̄_t for every step t = 1..T of ``law``."""
    return np.array([exact_epsilon(law.p[t], law.pbar[t], delta=delta) for t in range(law.p.shape[0])])


def exact_epsilon_curve(
    process: Process,
    *,
    delta: float,
    cells_per_clip: int = 50,
    cells_per_sd: int = 25,
    extent_sds: float = 10.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact ε(δ) of θ_t vs θ̄_t for t = 1..T, the grid mass lost by each step, and the R → ∞ limit of the
    paper audit's μ̂ (:func:`threshold_mu_limit`).

    For an infinite switch point (g constant, Example 1 of the paper) the law is Gaussian and the closed form
    μ = 1/(σ√(1 + (t − 1)/B²)) is used (μ-GDP is exact for a Gaussian pair).

    Returns:
        (epsilons, lost_mass, mu_limit), each of length T.
    """
    if not np.isfinite(process.h):
        t = np.arange(1, process.steps + 1)
        mus = 1.0 / (process.sigma * np.sqrt(1.0 + (t - 1) / process.batch_size**2))
        eps = np.array([gdp_epsilon(mu=float(m), delta=delta) for m in mus])
        return eps, np.zeros(process.steps), mus
    law = exact_laws(process, cells_per_clip=cells_per_clip, cells_per_sd=cells_per_sd, extent_sds=extent_sds)
    mu_limit = np.array([threshold_mu_limit(law.p[t], law.pbar[t]) for t in range(process.steps)])
    return exact_epsilons(law, delta=delta), law.lost, mu_limit


def exact_tradeoff(p: np.ndarray, pbar: np.ndarray, *, max_points: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Trade-off curve (FPR, FNR) of the likelihood-ratio tests between two discrete laws (Neyman–Pearson).

    Cells are declared "member" in decreasing order of p̄/p. Randomisation inside a cell is not used, so the
    points lie on the exact curve of the grid laws (fig6b, Cebere et al. App. E).

    Args:
        p: cell masses of the non-member law (θ_t, not inserted).
        pbar: cell masses of the member law (θ̄_t, inserted), same grid.
        max_points: if given, thin the curve to about this many points evenly spaced in arc length.

    Returns:
        (fpr, fnr), FPR increasing.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log(pbar) - np.log(p)
    order = np.argsort(-np.nan_to_num(ratio, nan=-np.inf), kind="stable")
    fpr = np.concatenate(([0.0], np.cumsum(p[order])))
    fnr = 1.0 - np.concatenate(([0.0], np.cumsum(pbar[order])))
    fpr = np.clip(fpr / fpr[-1], 0, 1)
    fnr = np.clip(fnr, 0, 1)
    if max_points is not None and fpr.size > max_points:
        arc = np.concatenate(([0.0], np.cumsum(np.abs(np.diff(fpr)) + np.abs(np.diff(fnr)))))
        keep = np.unique(np.searchsorted(arc, np.linspace(0.0, arc[-1], max_points)).clip(0, fpr.size - 1))
        fpr, fnr = fpr[keep], fnr[keep]
    return fpr[::-1], fnr[::-1]


def upper_bound_epsilon(*, sigma: float, delta: float) -> float:
    """The accounting upper bound of the §6 process: one Gaussian step with sampling rate 1, i.e. μ = 1/σ GDP.

    Cebere et al. Section 6: the crafted gradient enters at step 1 only, later steps are post-processing.

    Args:
        sigma: noise multiplier σ.
        delta: δ of the reported ε.

    Returns:
        ε(δ) of μ = 1/σ GDP.
    """
    return gdp_epsilon(mu=1.0 / sigma, delta=delta)
