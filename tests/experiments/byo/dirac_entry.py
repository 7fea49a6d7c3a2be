"""examples/byo/plain_dpsgd.py with a model wide enough for many Dirac canaries: the same loop (its per-example loss
adds ``w * data.canary_term(params, d)``, each row's Dirac coordinate ``d``) on 512 features, so that its linear model
has 1,026 parameters, 1,024 of them weights (plain_dpsgd's 22 hold at most 20 Dirac canaries). ``make`` is correct;
``make_noise_tenth`` trains at σ/10 behind the same claim (a gross bug). ``make_one_direction`` keeps the loss of
the single canary, ``w * data.canary_term(params)``, which a family's data refuses."""
import importlib.util
from dataclasses import replace
from pathlib import Path

FEATURES = 512


def _plain(name="plain_dpsgd_wide"):
    """A copy of the example module of its own, with FEATURES widened (its functions read the module's globals)."""
    path = Path(__file__).resolve().parents[3] / "examples" / "byo" / "plain_dpsgd.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.FEATURES = FEATURES
    return module


_WIDE = _plain()
_TENTH = _plain("plain_dpsgd_wide_tenth")
_TENTH.NOISE = _WIDE.NOISE / 10
_TENTH.epsilon = lambda noise, steps, rate: 1.0  # its claim is not used (make_noise_tenth states the correct one): skip the slow PLD at σ/10


def make(setting=None):
    return _WIDE.make(setting)


def make_noise_tenth(setting=None):
    made = _WIDE.make(setting)
    tenth = None if setting is None else replace(setting, noise_multiplier=setting.noise_multiplier / 10)
    made.train = _TENTH.make(tenth).train
    return made
