"""Editing agent configs so their hooks call `attempt capture` (reference/capture.md §3.5).

Modules: `agents` (where each agent keeps hooks, their shape, our hook object), `command`
(the command we write and recognising ours), `jsonstyle` (style-preserving JSON edits),
`merge` (the merge algorithm, pure), `fileops` (lock, backup, atomic replace through
symlinks), `codexconfig` (Codex feature flag and trust), `install` (install/uninstall with
outcomes), `state` (what a config says, for doctor), `capturetest` (the end-to-end test).

Public API: `install.install(providers, dry_run=, verify=, db=)`,
`install.uninstall(providers, dry_run=)` → Report (`.ok`, `.to_json()`);
`state.inspect(agent, executable)`; `agents.select(names)`; `command.find_hook_executable()` (hooks), `command.find_executable()` (the `attempt` command).
"""
