"""The `attempt` command: a thin click layer over the library (parse options, render)."""
