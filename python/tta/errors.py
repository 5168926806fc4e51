"""Errors raised by tta. Each names the user's source line when one is known."""

from __future__ import annotations


class TTAError(Exception):
    """Base class of every error tta raises on purpose."""


class AnnotationError(TTAError):
    """Misuse of ``lower_as`` at trace time (e.g. nesting)."""


class PluginError(TTAError):
    """A plugin descriptor is invalid or conflicts with one already registered."""


class KernelCheckError(PluginError):
    """A plugin's kernel does not compute what the region it replaces computes (``tta.verify.check``):
    ``region`` and ``source`` name the region, ``config`` the kernel config, ``output`` the
    output by name; ``report`` is the whole check (``KernelCheck``)."""

    def __init__(
        self,
        message: str,
        *,
        region: str | None = None,
        source: str | None = None,
        config: dict | None = None,
        output: str | None = None,
        max_error: float | None = None,
        report=None,
    ):
        super().__init__(message)
        self.region = region
        self.source = source
        self.config = config
        self.output = output
        self.max_error = max_error
        self.report = report


class GraphError(TTAError):
    """The exported graph is malformed, or the rewrite could not be applied.

    ``node`` and ``source`` name the offending node and the user's ``file:line`` when known.
    """

    def __init__(self, message: str, *, kind: str = "verify", node: str | None = None, source: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.node = node
        self.source = source


class RegionRefusedError(TTAError):
    """Regions the user marked could not be lowered (``tta.rewrite(..., on_refused="raise")``).

    ``regions`` holds the refused regions' reports; ``result`` the whole ``RewriteResult``, whose
    program still runs every refused region as ordinary ops.
    """

    def __init__(self, message: str, *, regions: list, result=None):
        super().__init__(message)
        self.regions = regions
        self.result = result


class RegionRefusedWarning(UserWarning):
    """``on_refused="warn"``: the same message as ``RegionRefusedError``, as a warning."""


class PackageRuntimeWarning(UserWarning):
    """An AOTInductor package was written in a form known to crash when it is loaded (it carries
    its own copy of libstdc++): the package is kept, the warning says why and what to change."""


class EagerFallbackWarning(UserWarning):
    """A ``tta::<op>`` ran its region body instead of the plugin's kernel on CUDA inputs."""


class KernelCheckWarning(UserWarning):
    """``check_kernels`` could not run some plugin's kernel against its region (no CPU
    interpreter for the DSL, a body that fails on random inputs, a launch it could not record):
    that kernel is unchecked, and the warning says which and why."""


class MissingPackageError(TTAError, ImportError):
    """A package a tta feature needs is not installed (or does not import) in this Python; the
    message says which, how to install it and into which environment. Also an ``ImportError``,
    so code that guards an optional import keeps working."""
