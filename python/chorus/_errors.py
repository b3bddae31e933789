"""The exception of the chorus package."""

from __future__ import annotations


class ChorusError(RuntimeError):
    """A call into Chorus failed.

    ``code`` is the C API's result (a :class:`chorus.Result`), ``description``
    its short description, and ``message`` the library's detailed text
    (``chorus_comm_last_error``: what failed, where, and which peer).
    Arguments that Python can check are rejected earlier, with TypeError or
    ValueError.
    """

    def __init__(self, code: int, description: str = "", message: str = "") -> None:
        self.code = code
        self.description = description
        self.message = message
        text = f"{description}: {message}" if message else description
        super().__init__(text or f"Chorus error {int(code)}")
