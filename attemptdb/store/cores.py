"""How many cores this process may run on: its affinity (`taskset`, a container's cpuset), not
the machine's count."""

import os


def available() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1
