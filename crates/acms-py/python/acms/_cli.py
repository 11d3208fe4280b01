"""The ``acms`` console script: runs the ``acms`` executable this wheel carries."""

import os
import subprocess
import sys


def binary() -> str:
    """The path of the bundled ``acms`` executable."""
    name = "acms.exe" if os.name == "nt" else "acms"
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", name)


def main() -> None:
    path = binary()
    if not os.path.isfile(path):
        sys.exit(
            f"acms: the executable is missing from this installation ({path}); "
            "reinstall a wheel built by scripts/build-wheel.sh"
        )
    argv = [path, *sys.argv[1:]]
    if os.name == "nt":
        sys.exit(subprocess.call(argv))
    # Replaces this process: signals, stdin/stdout (the MCP server's stdio) and the exit code
    # are the binary's own.
    os.execv(path, argv)


if __name__ == "__main__":
    main()
