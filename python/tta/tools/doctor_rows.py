"""The rows of ``tta doctor``'s table and their statuses, shared by the checks and the table."""

from __future__ import annotations

from dataclasses import dataclass

OK, SKIP, WARN, PROBLEM = "ok", "skipped", "warning", "PROBLEM"


@dataclass
class Row:
    """One line of the table: what was checked, what was found, what tta will do with it, and
    the status (``note`` says why for anything but ok)."""

    check: str
    found: str
    plan: str = ""
    status: str = OK
    note: str = ""


def one_line(e: BaseException | str, limit: int = 300) -> str:
    """An exception (or text) as one line: its type where that helps, the first line of its message."""
    if isinstance(e, BaseException):
        text = str(e).strip().splitlines()[0] if str(e).strip() else ""
        text = f"{type(e).__name__}: {text}" if text and not _is_tta(e) else (text or type(e).__name__)
    else:
        text = " ".join(str(e).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_tta(e: BaseException) -> bool:
    from ..errors import TTAError

    return isinstance(e, TTAError)
