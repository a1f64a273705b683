"""Coded errors. Every failure a user can see carries a stable code and never echoes content.

Exit statuses (CLI): 1 = a problem was found (verify, conformance, doctor), 2 = bad usage or
malformed input. `AttemptError.exit_status` says which one an error is.
"""


class AttemptError(Exception):
    """A user-facing failure: `code` is stable (`store.newer_schema`), `message` is one line."""

    exit_status = 2

    def __init__(self, code: str, message: str, *, exit_status: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        if exit_status is not None:
            self.exit_status = exit_status

    def __str__(self) -> str:
        return f"error[{self.code}]: {self.message}"
