"""The score registry: every canary score an audit reads, as a named value with its declared inputs.

The contract: a score is one number per (model, canary), **higher ⇒ member** (the canary was in the training). Every
estimator of :mod:`hsaudit.audit` reads scores in this orientation; a paper's score that is lower for a member (a
loss, a coordinate that gradient descent moves against the canary) is negated where it is computed.

A registry entry (:class:`Score`) holds the score's name, its formula, the inputs it reads (:data:`INPUTS`) and a
line of description. Names and metadata live here, in ``util`` (no numpy, no torch), so that every plan, the CLI and
both sides of an experiment package may import them; the computations live in the side that runs them (the training
side for a score of the models' parameters, the audit side for a score computed from other scores):

- ``final`` and ``relative``: :func:`hsaudit.experiments.byo.train.harness.canary_scores` (``hsaudit
  audit-training --score``), Cebere et al.'s :func:`hsaudit.experiments.cebere.train.adversaries.make_scorer`
  (A_L: ``final``; A_GC: ``relative``, ``final`` when θ0 is unknown), Steinke et al.'s Figure 4
  (:func:`hsaudit.experiments.steinke.train.images.observer`: ``final``), Yoon et al.'s
  :func:`hsaudit.experiments.yoon.crafting.input_scores` (``final``), the one-run study's ``raw`` score
  (:mod:`hsaudit.experiments.one_run.train`: ``relative``);
- ``cosine``: Cebere et al.'s A_CotS (:func:`hsaudit.experiments.cebere.train.adversaries.make_scorer`);
- ``inclusions`` and ``norm``: Steinke et al.'s Dirac canary
  (:func:`hsaudit.experiments.steinke.train.images.observer`) and their Table 1 language-model canary
  (:func:`hsaudit.experiments.steinke.train.language.embedding_score`: ``gradient`` is ``inclusions``);
- ``median_centred``, ``noiseless``, ``standardised``, ``reference`` and ``calibrated``: the one-run study's corrected
  scores (:func:`hsaudit.experiments.one_run.audit.corrected_scores`).

A paper whose config names a score otherwise maps its names to entries in its own package
(:data:`hsaudit.experiments.one_run.values.SCORE_ENTRIES`, :data:`hsaudit.experiments.steinke.train.canaries.SCORES`,
:data:`hsaudit.experiments.steinke.values.SCORE_ENTRIES`, :data:`hsaudit.experiments.cebere.train.adversaries.SCORES`,
:data:`hsaudit.experiments.yoon.crafting.SCORE`), and its computation dispatches on the entry's name. A new
score is one entry of :data:`SCORES` (and its computation, where none computes it yet).
"""

from __future__ import annotations

from dataclasses import dataclass

ORIENTATION = "higher ⇒ member"
"""The orientation every registered score has."""

INPUTS = {
    "final_model": "the model the score is taken on: the released θ_T, or θ_t where a paper scores every step",
    "initial_model": "the model's initialisation θ0 (known to the adversary, or observed during the training)",
    "canary": "the canary value: an input (x*, y*), or a gradient direction u (a coordinate e_d for a Dirac canary)",
    "hyperparameters": "the training's learning rate η, batch size B and clipping norm C",
    "scores_of_the_point": "the relative scores of the other models audited with it (the same canaries)",
    "noiseless_run": "the relative scores of the canary-free, noise-free run from the same θ0 and batches",
    "reference_models": "the relative scores of K reference models trained independently of every audited bit",
}
"""What a score may read, by name (:attr:`Score.inputs`)."""


@dataclass(frozen=True)
class Score:
    """A registry entry: a canary score as a value (higher ⇒ member).

    Attributes:
        name: the name configs and the CLI use.
        formula: the score of model i on canary j, oriented (higher ⇒ member).
        inputs: what it reads, names of :data:`INPUTS`.
        description: one line for docs and ``--help``.
    """

    name: str
    formula: str
    inputs: tuple[str, ...]
    description: str

    def __post_init__(self) -> None:
        unknown = sorted(set(self.inputs) - set(INPUTS))
        if not self.inputs or unknown:
            raise ValueError(f"score {self.name!r}: inputs must be names of INPUTS ({', '.join(INPUTS)}), got "
                             f"{list(self.inputs)}")  # fmt: skip

    @property
    def orientation(self) -> str:
        """:data:`ORIENTATION`: the contract every score keeps."""
        return ORIENTATION


SCORES: dict[str, Score] = {
    s.name: s
    for s in (
        Score("final", "−ℓ(θ_T; x*, y*) for an input canary; −⟨u, θ_T⟩ for a gradient canary",
              ("final_model", "canary"), "the final model's canary score"),
        Score("relative", "−(ℓ(θ_T; x*, y*) − ℓ(θ0; x*, y*)) for an input canary; −⟨u, θ_T − θ0⟩ for a gradient canary",
              ("final_model", "initial_model", "canary"), "the final model's canary score minus θ0's"),
        Score("cosine", "−cos(u, θ_T − θ0) (0 when θ_T = θ0)", ("final_model", "initial_model", "canary"),
              "the cosine of the model's movement with the canary's gradient direction, negated"),
        Score("inclusions", "−⟨u, θ_T − θ0⟩ · B / (ηC)", ("final_model", "initial_model", "canary", "hyperparameters"),
              "relative, in units of one inclusion of a canary of norm C (an affine map shared by both worlds)"),
        Score("norm", "‖P_u(θ_T − θ0)‖ · B / (ηC), P_u the canary's coordinates",
              ("final_model", "initial_model", "canary", "hyperparameters"),
              "the norm of the movement of the canary's own coordinates, in units of one inclusion"),
        Score("median_centred", "s_ij − median_i' s_i'j", ("final_model", "initial_model", "canary",
              "scores_of_the_point"), "relative, minus its median over the models of the point (per canary)"),
        Score("noiseless", "s_ij − s⁰_j", ("final_model", "initial_model", "canary", "noiseless_run"),
              "relative, minus the noise-free canary-free run's"),
        Score("standardised", "(s_ij − median_i' s_i'j) / (1.4826 · MAD_i' s_i'j)", ("final_model", "initial_model",
              "canary", "scores_of_the_point"), "relative, median-centred and divided by its robust spread"),
        Score("reference", "Δ·(s_ij − μ_j − Δ/2) / σ_j²", ("final_model", "initial_model", "canary", "hyperparameters",
              "reference_models"), "a Gaussian likelihood ratio against canary-free reference models"),
        Score("calibrated", "(μ¹_j − μ⁰_j)·(s_ij − (μ⁰_j + μ¹_j)/2) / σ_j²", ("final_model", "initial_model", "canary",
              "reference_models"), "a Gaussian likelihood ratio against reference models with known bits"),
    )
}  # fmt: skip
"""The scores by name. A new score is one more entry here."""


def score_entry(name: str) -> Score:
    """The registry entry called ``name``.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    if name not in SCORES:
        raise ValueError(f"unknown score {name!r}; choose from {', '.join(SCORES)}")
    return SCORES[name]


__all__ = ["INPUTS", "ORIENTATION", "SCORES", "Score", "score_entry"]
