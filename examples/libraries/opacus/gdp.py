"""hooks.py with the claim of the GDP accountant (PrivacyEngine(accountant="gdp")).

    hsaudit audit-training --entry examples/libraries/opacus/gdp.py:make --audit-setting
"""

from functools import partial

import hooks

make = partial(hooks.make, accountant="gdp")
