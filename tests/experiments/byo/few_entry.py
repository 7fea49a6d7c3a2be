"""gauss_entry.py's mechanism in a space wide enough for many canaries (D = 2048): the Gaussian mechanism composed
T = 5 times along every input, full batch, loss(θ, x, y) = −⟨θ, x⟩, so the score of an input canary x* beyond C is
‖x*‖ (T·C·[x* in] + N(0, Tσ²C²) + the other rows' ⟨clip(x_i), x̂*⟩): μ-GDP in each canary with μ = √T/σ, and M
random canaries in 2,048 dimensions barely interfere. ``make`` is correct; ``make_noise_tenth`` runs σ/10 behind the
same claim (a gross bug)."""
from gauss_entry import make as _gauss  # the entry's folder is on sys.path, as for a user's sibling modules

WIDTH = 2048


def make(setting=None):
    return _gauss(setting, width=WIDTH)


def make_noise_tenth(setting=None):
    return _gauss(setting, noise_scale=0.1, width=WIDTH)
