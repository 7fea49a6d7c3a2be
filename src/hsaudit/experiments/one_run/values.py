"""The values of the one-run study's config that both its plan (which checks them) and its audit (which computes
them) need: numpy- and scipy-free, so that the plan, imported by every ``snakemake`` call and ``hsaudit plan``, does
not import the audit (scipy.stats, ~1 s)."""

from __future__ import annotations

SCORES = ("raw", "median_centred", "noiseless", "standardised")
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
"""

__all__ = ["SCORES"]
