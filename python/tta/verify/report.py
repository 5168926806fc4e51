"""The report of ``tta.check_kernels``: per region (op), per kernel config, per size: ran or not
and why, the largest error; and the error a mismatch raises, in words a user can act on."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..runtime.mismatch import sizes_text

PASS, FAIL, ERROR, SKIPPED, NOT_RUN = "pass", "FAIL", "error", "skipped", "not run"


@dataclass
class SizeCheck:
    """One (config, size): ``status`` pass | FAIL | error | skipped (guards) | not run."""

    sizes: dict[str, int]
    status: str
    max_error: float | None = None  # over all outputs
    note: str = ""
    errors: dict[str, float] = field(default_factory=dict)  # output name -> max error
    failed: list[str] = field(default_factory=list)  # outputs off the reference
    hint: str | None = None  # outputs in another order, in words

    def __str__(self) -> str:
        at = ",".join(f"{k}={v}" for k, v in self.sizes.items()) or "static"
        err = f" err {self.max_error:.2g}" if self.max_error is not None else ""
        return f"{at}: {self.status}{err}{f' ({self.note})' if self.note and self.status != PASS else ''}"


@dataclass
class ConfigCheck:
    backend: str
    launch: str  # the launch function's qualified name
    config: dict
    how: str  # "GPU artifact" | "Triton interpreter" | "not run"
    sizes: list[SizeCheck] = field(default_factory=list)
    note: str = ""
    output_params: list[str] | None = None  # the launch function's parameters the outputs go to

    @property
    def label(self) -> str:
        cfg = ",".join(f"{k}={v}" for k, v in self.config.items())
        return f"{self.backend} {self.launch} [{cfg}]"

    def __str__(self) -> str:
        if not self.sizes:
            return f"{self.label}: {NOT_RUN}: {self.note}"
        return f"{self.label} ({self.how}): " + "; ".join(str(s) for s in self.sizes)


@dataclass
class RegionCheck:
    """One plugin op: the regions it replaced (one body, one signature), its configs."""

    regions: list[str]
    op: str
    source: str | None
    outputs: list[str]
    configs: list[ConfigCheck] = field(default_factory=list)
    note: str = ""
    cached: bool = False
    key: str | None = field(default=None, repr=False)  # of a cached pass
    origin: str | None = None  # what chose the region: "annotation" (lower_as), "module", "pattern"
    dims: dict[str, str] = field(default_factory=dict, repr=False)  # export symbol -> the user's Dim name

    def __str__(self) -> str:
        head = f"{', '.join(self.regions)} -> tta::{self.op} ({self.source or '?'}), outputs ({', '.join(self.outputs)})"
        head += " [passed before: cached]" if self.cached else ""
        lines = [head] + [f"    {c}" for c in self.configs] + ([f"    {self.note}"] if self.note else [])
        return "\n".join(lines)


@dataclass
class KernelCheck:
    """What ``check_kernels`` did: ``regions`` (one entry per plugin op), ``device`` ("cuda" or
    "cpu"), ``notes`` (what could not run, in words), ``seconds``."""

    regions: list[RegionCheck]
    device: str
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def _all(self, status: str) -> list[tuple[RegionCheck, ConfigCheck, SizeCheck]]:
        return [(r, c, s) for r in self.regions for c in r.configs for s in c.sizes if s.status == status]

    @property
    def ok(self) -> bool:
        return not self._all(FAIL) and not self._all(ERROR)

    @property
    def failures(self) -> list[tuple[RegionCheck, ConfigCheck, SizeCheck]]:
        return self._all(FAIL) + self._all(ERROR)

    @property
    def not_run(self) -> list[tuple[RegionCheck, ConfigCheck]]:
        return [(r, c) for r in self.regions for c in r.configs if not c.sizes]

    @property
    def unchecked(self) -> list[str]:
        """What did not run, one line each: a plugin op none of whose configs ran, or a config."""
        out = []
        for r in self.regions:
            if not any(c.sizes for c in r.configs):
                why = r.note or "; ".join(c.note for c in r.configs if c.note) or "nothing ran"
                out.append(f"{', '.join(r.regions)} ({r.source or '?'}): {why}")
                continue
            out.extend(f"{', '.join(r.regions)} ({r.source or '?'}), {c.label}: {c.note}" for c in r.configs if not c.sizes)
        return out

    def __repr__(self) -> str:
        ran = sum(len(c.sizes) for r in self.regions for c in r.configs)
        head = (
            f"tta kernel check on {self.device}: {len(self.regions)} plugin op(s), {len(self._all(PASS))}/{ran} runs pass, "
            f"{len(self.failures)} fail, {len(self.not_run)} config(s) not run ({self.seconds:.2f}s)"
        )
        return "\n".join([head] + [f"  {r}" for r in self.regions] + [f"  note: {n}" for n in self.notes])

    __str__ = __repr__


def mismatch_message(region: RegionCheck, config: ConfigCheck, size: SizeCheck, how_many: int) -> str:
    """The error for the first failing run: region, source line, config, output, error."""
    where = f"region {', '.join(region.regions)} ({region.source or 'source unknown'})"
    at = sizes_text(size.sizes, region.dims)
    if size.status == ERROR:
        msg = f"tta: the kernel of {where}, config {config.label}, failed when run at {at} ({config.how}): {size.note}"
    else:
        worst = max(size.failed, key=lambda k: size.errors.get(k, 0.0))
        msg = (
            f"tta: the kernel of {where} does not compute what the region computes: config {config.label}, "
            f"output {worst!r} differs from the region body by up to {size.errors.get(worst, float('nan')):.3g} at {at} "
            f"({config.how})"
        )
        if len(size.failed) > 1:
            msg += "; outputs off: " + ", ".join(f"{k} (max error {size.errors.get(k, float('nan')):.3g})" for k in size.failed)
        if size.note:
            msg += f"; {size.note}"
        if size.hint:
            msg += f". {size.hint[0].upper()}{size.hint[1:]}"
    if how_many > 1:
        msg += f" ({how_many - 1} more failing run(s) in the report)"
    return msg + ". To skip this check: check_kernels=False"
