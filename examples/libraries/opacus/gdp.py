"""hooks.py with the claim of the GDP accountant (PrivacyEngine(accountant="gdp")).

    hsaudit audit-training --entry examples/libraries/opacus/gdp.py:make --audit-setting
    hsaudit audit-training --entry examples/libraries/opacus/gdp.py:make   # q = 0.1: flagged (ε 2.995 < 4.178)
"""

from functools import partial

import hooks

make = partial(hooks.make, accountant="gdp")
