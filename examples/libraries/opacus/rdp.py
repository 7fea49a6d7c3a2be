"""hooks.py with the claim of the RDP accountant (PrivacyEngine(accountant="rdp")).

    hsaudit audit-training --entry examples/libraries/opacus/rdp.py:make --audit-setting
"""

from functools import partial

import hooks

make = partial(hooks.make, accountant="rdp")
