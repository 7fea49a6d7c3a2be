"""A newcomer's toy paper (tests/test_newcomer.py adds it to a copy of the repository): the Gaussian mechanism
simulated at σ and audited with the config's rule. Shaped as every experiment package: ``plan``, ``audit``,
``figures``; nothing is trained."""
