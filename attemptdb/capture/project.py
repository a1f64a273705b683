"""Project identity of a working directory, as a hook there records it: the git worktree root
(else the directory), its remote, branch and HEAD. Shared by the hook and the importers."""

import os


def identify(cwd: str | None, opts: dict, device_id: str, process_cwd: str | None = None) -> tuple[dict, str]:
    """(Event v1 `project`, root) for a hook or import: `--project-root`/`--repo-remote` in
    `opts` win over what git says about `cwd` (relative to `process_cwd`)."""
    from ..model import ids
    from . import gitinfo
    root = opts.get("project_root")
    remote = opts.get("repo_remote")
    branch = head = None
    if root is None or remote is None:
        # a relative directory is relative to the hook's own working directory (`process_cwd`),
        # whichever process reads it: the daemon never changes into the hook's directory
        where = root or cwd or "."
        if process_cwd and isinstance(where, str) and not os.path.isabs(where):
            where = os.path.join(process_cwd, where)
        info = gitinfo.git_info(where)
        if root is None:
            root = info.root or cwd or process_cwd or "."
        if remote is None and opts.get("project_root") is None:
            remote = info.remote
        branch, head = info.branch, info.head
    # a directory name that is not UTF-8 arrives with surrogate escapes, which no event may
    # hold: its undecodable bytes become U+FFFD (the project id follows the shown name)
    root = valid_text(root).replace("\\", "/") if isinstance(root, str) else "."
    project = ids.project_identity(root, remote, device_id)
    if branch:
        project["branch"] = branch
    if head:
        project["head"] = head
    return project, root


def project_of(directory: str, device_id: str) -> tuple[dict, str]:
    """(Event v1 `project`, root) of a working directory, as a hook there would record it:
    the git worktree root (else the directory), its remote, branch and HEAD."""
    return identify(directory, {}, device_id, directory)


def valid_text(s: str) -> str:
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
