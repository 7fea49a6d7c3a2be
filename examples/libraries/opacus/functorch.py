"""hooks.py with per-sample gradients by torch.func (grad_sample_mode="functorch").

    hsaudit audit-training --entry examples/libraries/opacus/functorch.py:make --audit-setting
"""

from functools import partial

import hooks

make = partial(hooks.make, mode="functorch")
