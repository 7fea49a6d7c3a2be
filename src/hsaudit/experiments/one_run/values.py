"""The values of the one-run study's config that both its plan (which checks them) and its audit (which computes
them) need: numpy- and scipy-free, so that the plan, imported by every ``snakemake`` call and ``hsaudit plan``, does
not import the audit (scipy.stats, ~1 s)."""

from __future__ import annotations

from hsaudit.util.scores import Score, score_entry

SCORE_ENTRIES: dict[str, Score] = {
    "raw": score_entry("relative"),
    **{name: score_entry(name) for name in ("median_centred", "noiseless", "standardised", "reference", "calibrated")},
}
"""The one-run scores by their config names, as entries of the score registry (:data:`hsaudit.util.scores.SCORES`;
``raw`` is the registry's ``relative`` of a Dirac canary)."""
SCORES = tuple(SCORE_ENTRIES)
"""The one-run scores (``one_run.scores``), each audited on the same models (its own rows, ``score`` column):

- ``raw``: A_GC-R's score of canary j in model i, s_ij = −(θ_T[d_j] − θ0[d_j]) (higher ⇒ included).
- ``median_centred``: s_ij − median_i' s_i'j over the M models of the point (per coordinate). Removes the
  coordinate's drift (the movement the data gives d_j, common to every model) without any bit: a function of the
  released models only. Undefined at M = 1 (the centred score is 0).
- ``noiseless``: s_ij − s⁰_j, where s⁰_j is the same score in the canary-free, noise-free run (DP-SGD with σ = 0 and
  no canary) from the same θ0 with the same batches: −(θ_T[d_j] − θ⁰_T[d_j]). A function of the released model and
  of what the adversary knows before training (θ0, batches, data, hyper-parameters), none of which depends on a bit;
  defined at M = 1. Costs one more run of T steps (shared by all models: they share θ0 and the batches).
- ``standardised``: (s_ij − median_i' s_i'j) / (1.4826 · MAD_i' s_i'j) over the M models of the point, per
  coordinate (MAD: the median absolute deviation from that median; 1.4826·MAD estimates a Gaussian's sd). Centres
  like ``median_centred`` and puts every coordinate's spread on one scale, for coordinates whose noise differs;
  a function of the released models only (pre-registered 2026-11-26). Undefined where a coordinate's MAD is 0:
  always at M = 1.
- ``reference``: the Gaussian log-likelihood ratio of "included" against "not included" for canary j, with the
  "not included" law of coordinate d_j measured on K canary-free **reference models** (every bit 0, the same θ0,
  batches and σ as the audited models, noise of their own):
  Δ·(s_ij − μ_j − Δ/2) / σ_j², where μ_j and σ_j are the mean and standard deviation (ddof 1) of the reference
  models' raw scores on d_j and Δ = η·C·⌊T/k⌋/B is the nominal shift one canary gives its coordinate (the score's
  shift in a linear model). Removes the per-coordinate bias that ``noiseless`` leaves (μ_j is the noisy run's mean,
  not the noise-free run's) and weighs each coordinate by its own noise, measured without the canary's in/out split
  that inflates ``standardised``'s MAD. A function of the released model and of K models trained independently of
  every bit; defined at M = 1; costs K·T more model-steps (pre-registered 2026-11-26, second session). Undefined
  where K < 2 or some σ_j is 0.
- ``calibrated``: the same likelihood ratio with both laws measured, on K reference models that carry canaries
  with **their own known bits** (drawn like the audited models' bits, from a stream of their own): per coordinate,
  μ¹_j and μ⁰_j are the mean raw scores of the reference models with and without canary j, σ_j² their pooled
  within-group variance, and the score is (μ¹_j − μ⁰_j)·(s_ij − (μ⁰_j + μ¹_j)/2)/σ_j². The "out" law is then that
  of a model holding the other canaries (the interference the canary-free ``reference`` misses) and the shift is
  each coordinate's own, not the nominal Δ. The reference models are the adversary's, trained independently of
  the audited bits, so the score is post-processing; K·T more model-steps (pre-registered 2026-11-26 evening,
  after ``reference``'s run). Undefined where some coordinate has fewer than 2 reference models on a side or a
  pooled variance of 0.
"""

__all__ = ["SCORES", "SCORE_ENTRIES"]
