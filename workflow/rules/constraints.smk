# Wildcard constraints shared by the rule files (rules constrain wildcards of their own, e.g. {sign}, in place).


wildcard_constraints:
    sigma=r"\d+(\.\d+)?",
    batch=r"\d+",
    rep=r"\d+",
    setup=r"[0-9a-f]{12}",
    audit=r"[0-9a-f]{12}",
    runs=r"\d+",
    size=r"\d+",
    index=r"\d+",
    data=r"[0-9a-f]{12}",
    population=r"[0-9a-f]{12}",
    run=r"\d+",
