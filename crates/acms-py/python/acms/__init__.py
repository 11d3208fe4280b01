"""acms: the right context at the right size for LLM agents.

The engine is Rust (``acms._acms``); this package only re-exports it. See ``__init__.pyi``
for the API and the repository's README ("Use it from Python") for an example.
"""

from ._acms import AcmsError, Compacted, Context, Plan, Workspace, compact, version

__version__ = version()
__all__ = ["AcmsError", "Compacted", "Context", "Plan", "Workspace", "compact", "version"]
