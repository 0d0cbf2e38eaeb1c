"""Sinter's errors as Python exceptions.

Every failure the library reports (a bad graph, a malformed file, an unsupported pattern, a
missing GPU) is a ``sinter.Error``: ``.code`` says which kind of failure it is (an ``ErrorCode``),
``.message`` names the node or tensor and says what was expected and found, and ``str(error)``
reads exactly as the C++ ``what()`` does ("invalid graph: node 'mm' ..."). Each code has its own
subclass, so ``except sinter.InvalidGraphError`` catches only that kind.
"""

from ._core import ErrorCode, _error_label


class Error(Exception):
    """The base of every error Sinter raises."""

    code = ErrorCode.internal  # each subclass sets its own

    def __init__(self, message: str):
        super().__init__(f"{_error_label(self.code)}: {message}")
        self.message = message


class InvalidGraphError(Error):
    """The graph breaks a rule of the IR (shapes, dtypes, topology)."""

    code = ErrorCode.invalid_graph


class InvalidArgumentError(Error, ValueError):
    """A bad argument to an API call."""

    code = ErrorCode.invalid_argument


class InvalidStateError(Error):
    """A call made before what it needs (an enqueue before every tensor is bound)."""

    code = ErrorCode.invalid_state


class ParseError(Error):
    """A malformed or inconsistent file (JSON graph, plan bundle, cache entry)."""

    code = ErrorCode.parse


class UnsupportedError(Error):
    """A valid request that this build or engine cannot do."""

    code = ErrorCode.unsupported


class IoError(Error, OSError):
    """Reading or writing a file failed."""

    code = ErrorCode.io


class CudaError(Error):
    """A CUDA runtime or driver call failed, or there is no usable GPU."""

    code = ErrorCode.cuda


class CompileError(Error):
    """Run-time compilation of a kernel failed."""

    code = ErrorCode.compile


class CorruptBundleError(Error):
    """A plan bundle fails its checks."""

    code = ErrorCode.corrupt_bundle


class WatchdogTimeoutError(Error):
    """A megakernel task waited past the watchdog's limit for a producer."""

    code = ErrorCode.timeout


class InternalError(Error):
    """A broken invariant inside Sinter: a bug, please report it."""

    code = ErrorCode.internal


ERROR_CLASSES = {cls.code: cls for cls in Error.__subclasses__()}


def _from_library(code: ErrorCode, message: str) -> Error:
    """The exception for a C++ sinter::Error (called by the extension's exception translator)."""
    return ERROR_CLASSES.get(code, InternalError)(message)


__all__ = ["Error"] + [cls.__name__ for cls in Error.__subclasses__()]
