"""`attempt` entry point. `attempt capture …` takes the lean hook path (no click, no
jsonschema, no cryptography); everything else loads the click CLI."""

import sys


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] == "capture":
        from .capture import main as capture_main
        return capture_main(args[1:])
    from .cli.main import run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
