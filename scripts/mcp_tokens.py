"""Exact cl100k_base token counts for the MCP scripts, with `tiktoken` from PyPI and the BPE
table tiktoken-rs ships in its crate (the same table acms counts with): tiktoken itself would
download it from a host this project does not reach. The table is checked against tiktoken's
own hash.
"""

import glob
import os

_ENCODING = None


def _table():
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    found = sorted(glob.glob(os.path.join(
        home, "registry", "src", "*", "tiktoken-rs-*", "assets", "cl100k_base.tiktoken")))
    if not found:
        raise SystemExit(
            "mcp_tokens.py: no tiktoken-rs crate source under $CARGO_HOME/registry/src "
            "(run `cargo fetch` in the repository first)")
    return found[-1]


def encoding():
    global _ENCODING
    if _ENCODING is None:
        import tiktoken
        import tiktoken_ext.openai_public as public
        from tiktoken.load import load_tiktoken_bpe

        path = _table()
        public.load_tiktoken_bpe = lambda _url, expected_hash=None: load_tiktoken_bpe(
            path, expected_hash=expected_hash)
        _ENCODING = tiktoken.Encoding(**public.cl100k_base())
    return _ENCODING


def count_tokens(text):
    return len(encoding().encode(text, disallowed_special=()))
