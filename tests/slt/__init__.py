"""A sqllogictest conformance harness: the same files run against sparkwire and against a real
PostgreSQL 15, and sparkwire is measured on the records PostgreSQL passes (issue 20, item 5).

records.py parses the format, results.py formats and compares answers (both pure),
executor.py runs records over a DB-API connection with a per-statement timeout, targets.py
starts and resets the two servers, report.py turns outcomes into figures, and __main__.py is
the `python -m tests.slt` command behind `make conformance`.
"""
