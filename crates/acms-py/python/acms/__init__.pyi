"""Type stubs for acms (the module is ``acms._acms``, written in Rust)."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Union

__version__: str

class AcmsError(Exception):
    """An error of the acms engine; the message is the engine's own, with its causes."""

class Context:
    """An assembled context: ``text`` holds ``tokens`` <= ``budget`` tokens, counted exactly."""

    text: str
    tokens: int
    budget: int
    manifest: List[Dict[str, Any]]
    """What ``text`` holds: ``node`` (16 hex digits), ``path``, ``start_line``, ``end_line``,
    ``name``, ``kind``, ``depth``, ``tokens``, ``score``, ``strategies``, ``reasons``."""
    dropped: List[Dict[str, Any]]
    """Candidates left out, with why."""
    notes: List[str]
    """Notes on the assembly (refresh, budget caps, missing vectors, ...)."""
    data: Dict[str, Any]
    """The whole result in its serde form: ``context`` (with ``skeleton`` and
    ``diagnostics``) and ``refresh``; a phase adds ``plan``, ``phase``, ``memory``,
    ``inherited_tokens`` and ``changes``."""

class Plan:
    """A plan: phases with their contexts, decisions, child plans."""

    @property
    def id(self) -> str: ...
    @property
    def parent(self) -> Optional[str]: ...
    task: str
    def phase(
        self,
        name: str,
        budget: Optional[int] = 8000,
        *,
        window: Optional[int] = None,
        focus: str = "",
        files: Sequence[str] = (),
        symbols: Sequence[str] = (),
    ) -> Context: ...
    def decide(
        self, phase: str, notes: Optional[str] = None, fragments: Sequence[str] = ()
    ) -> Dict[str, Any]: ...
    def child(self, task: str) -> "Plan": ...
    def history(self) -> Dict[str, Any]: ...
    def close(self) -> Dict[str, Any]: ...

class Workspace:
    """A repository opened for an agent: indexed on first use, refreshed before every call.

    Safe to share between threads (calls run one at a time); the GIL is released while the
    engine indexes and assembles.
    """

    def __init__(self, path: Union[str, "PathLike[str]"] = ".", *, vectors: bool = True) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def index_dir(self) -> str: ...
    def context(
        self, task: str, budget: Optional[int] = 8000, *, window: Optional[int] = None
    ) -> Context: ...
    def search(
        self, query: str, *, strategies: Optional[Sequence[str]] = None, limit: int = 20
    ) -> List[Dict[str, Any]]: ...
    def expand(self, target: str, budget: int = 2000) -> Dict[str, Any]: ...
    def refresh(self) -> Dict[str, Any]: ...
    def plan(self, task: str) -> Plan: ...
    def get_plan(self, id: str) -> Plan: ...

class Compacted:
    """What ``compact`` returns."""

    messages: Union[List[Dict[str, Any]], Dict[str, Any]]
    """The conversation in the shape it was given."""
    outcome: str
    size: int
    """Tokens of ``messages`` as returned; never above ``hard_limit``."""
    original_size: int
    hard_limit: int
    diagnostics: Dict[str, Any]

def compact(
    messages: Union[Sequence[Dict[str, Any]], Dict[str, Any]],
    hard_limit: int,
    *,
    format: Optional[str] = None,
    tokenizer: str = "cl100k_base",
) -> Compacted:
    """Compacts an OpenAI or Anthropic conversation to at most ``hard_limit`` tokens."""

def version() -> str: ...
