"""hooks.py with per-sample gradients by torch's expanded weights (grad_sample_mode="ew").

    hsaudit audit-training --entry examples/libraries/opacus/ew.py:make --audit-setting
"""

from functools import partial

import hooks

make = partial(hooks.make, mode="ew")
