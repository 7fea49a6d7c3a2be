"""tests/newcomer/toy/ is not a test directory: it holds the files a newcomer's toy paper adds, at their paths in the
repository, which tests/test_newcomer.py copies into a temporary copy of the repository (its test file among them)."""

collect_ignore_glob = ["toy/*"]
