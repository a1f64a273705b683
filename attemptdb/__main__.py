"""`attempt` entry point. `attempt capture …` takes the lean hook path (no click, no
jsonschema, no cryptography); everything else loads the click CLI."""

import os
import sys


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] == "capture":
        from .capture import main as capture_main
        code = capture_main(args[1:])
        if argv is None:
            # Leave at once: skipping interpreter teardown and the last connection's close-time
            # WAL checkpoint (an fsync) saves ~10 ms on every tool call. Committed work is
            # already durable in the WAL; the next writer's autocheckpoint folds it in.
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(code)
        return code
    from .cli.main import run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
