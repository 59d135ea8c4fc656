"""The SQL front end of our own: PostgreSQL's parse tree → bound, typed plan → Spark.

    pglast (PostgreSQL's grammar) ─► bind (names against our catalog, PostgreSQL's
    typing and overload rules) ─► plan (a typed operator tree) ─► Spark SQL (sqlglot)

Not yet wired into the server: queries still take the sqlglot path of
`planner.parser`/`planner.translate`. This package grows beside it, tested on its own
(tests/unit/test_sql_*.py), until it covers what that path accepts; then the server
switches over and the old path is removed (issue "A PostgreSQL front end of our own").
"""
