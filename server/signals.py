"""pg_cancel_backend and pg_terminate_backend: calls that act on other sessions.

They cannot run in Spark, which knows nothing of sessions; the session spots
them in this one form, `SELECT pg_cancel_backend(pid)`, and the server sends
the signal.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.types import BY_NAME, SqlType
from server.outcome import Rows, rows_outcome

_SIGNALS = {"pg_cancel_backend": False, "pg_terminate_backend": True}


def answer(tree: exp.Expression, params: dict[int, object], send: Callable[[int, bool], bool]) -> Rows | None:
    """The result of a signal call (`send(pid, terminate)` signals, and says whether such a
    backend was found); None for any other statement."""
    signal = signal_call(tree, params)
    if signal is None:
        return None
    pid, terminate = signal
    found = send(pid, terminate)
    notices = [] if found else [("WARNING", f"PID {pid} is not a PostgreSQL backend process")]
    return rows_outcome(["pg_terminate_backend" if terminate else "pg_cancel_backend"], [(found,)],
                        [SqlType(BY_NAME["boolean"])], notices=notices)


def signal_call(tree: exp.Expression, params: dict[int, object]) -> tuple[int, bool] | None:
    """`SELECT pg_cancel_backend(pid)` (or pg_terminate_backend): the pid and whether to
    terminate; None for any other statement. The pid must be a constant or a parameter."""
    if not isinstance(tree, exp.Select) or len(tree.expressions) != 1 or tree.args.get("from"):
        return None
    call = tree.expressions[0].unalias()
    if isinstance(call, exp.Dot):
        call = call.expression
    if not isinstance(call, exp.Anonymous) or call.name.lower() not in _SIGNALS or not call.expressions:
        return None
    arg = call.expressions[0]
    while isinstance(arg, exp.Cast):
        arg = arg.this
    if isinstance(arg, exp.Parameter):
        value = params.get(int(arg.this.this))
    elif isinstance(arg, exp.Literal) and not arg.is_string:
        value = arg.this
    else:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{call.name.lower()}() takes a process id given as a constant "
                       "or a parameter, as in SELECT pg_cancel_backend(12345)")
    try:
        return int(value), _SIGNALS[call.name.lower()]
    except (TypeError, ValueError):
        raise SqlError("22P02", f'invalid input syntax for type integer: "{value}"') from None
