"""The hook log: one line per thing a capture could not do, in the state directory. A line
never holds content (no payload, no exception message): a code, a module and a line number."""

import os


def log(message: str):
    """One line in the hook log (never stdout, never content)."""
    try:
        from ..model import clock
        from ..store import location
        d = location.state_dir()
        os.makedirs(d, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(d, "hook.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                     0o600)  # the user's own, as the rest of the state directory
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(f"{clock.iso(clock.now_us())} {message}\n")
    except Exception:
        pass


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def why(e: BaseException) -> str:
    """`ErrorType(module.py:line)` of the innermost frame of ours that the exception passed
    through: enough to diagnose from the hook log, never the message (it may quote content)."""
    where = None
    tb = e.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.startswith(_PACKAGE_DIR):
            where = f"{name[len(_PACKAGE_DIR) + 1:]}:{tb.tb_lineno}"
        tb = tb.tb_next
    name = getattr(e, "code", None) if type(e).__name__ == "AttemptError" else None
    name = name or type(e).__name__  # a coded error names itself (never its message)
    return f"{name}({where})" if where else name
