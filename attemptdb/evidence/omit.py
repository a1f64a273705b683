"""Leaving local paths out of exported events (seed 001 allows omission during bundle export;
spec/bundle.md "Paths").

Invariants: `omit_paths` returns a new envelope, still valid Event v1, in which
- `project.root` is ROOT (`<repo>`);
- in `paths[].original`/`.logical` and the path attrs (cwd, previous_cwd, worktree_path,
  cwd_logical) the project root becomes `<repo>`, a home directory `~`, and any other absolute
  path `<path>/` + its last component;
- in every string of `content`, `raw` and `x_*` extensions the project root becomes `<repo>`
  and a home directory (`/home/<user>`, `/Users/<user>`, `<drive>:\\Users\\<user>`) `~`;
  other text is left as it is (content leaves bundles only when the exporter includes it).
Applying it twice gives the same envelope.
"""

ROOT = "<repo>"
PATH = "<path>"
PATH_ATTRS = ("cwd", "previous_cwd", "worktree_path", "cwd_logical")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.@+~")


def _replace_root(s: str, root: str) -> str:
    """`root` → ROOT wherever it is a whole path prefix (not followed by a name character)."""
    if not root or root in ("/", ".") or root not in s:
        return s
    out, i = [], 0
    while True:
        k = s.find(root, i)
        if k < 0:
            out.append(s[i:])
            return "".join(out)
        end = k + len(root)
        whole = end == len(s) or s[end] not in _NAME_CHARS
        before = k == 0 or s[k - 1] not in _NAME_CHARS
        out.append(s[i:k] + (ROOT if whole and before else root))
        i = end


def _replace_homes(s: str) -> str:
    for marker in ("/home/", "/Users/", "\\Users\\", "\\users\\"):
        i = 0
        while True:
            k = s.find(marker, i)
            if k < 0:
                break
            start = k - 2 if marker[0] == "\\" and k >= 2 and s[k - 1] == ":" else k
            j = k + len(marker)
            while j < len(s) and s[j] in _NAME_CHARS:
                j += 1
            if j == k + len(marker):
                i = j
                continue
            s = s[:start] + "~" + s[j:]
            i = start + 1
    return s


def _text(s, root: str):
    if isinstance(s, str):
        return _replace_homes(_replace_root(s, root))
    if isinstance(s, list):
        return [_text(x, root) for x in s]
    if isinstance(s, dict):
        return {k: _text(v, root) for k, v in s.items()}
    return s


def _path(s: str, root: str) -> str:
    s = _text(s, root)
    p = s.replace("\\", "/")
    if p.startswith(ROOT) or p.startswith("~") or not (p.startswith("/") or (len(p) > 1 and p[1] == ":")):
        return s
    last = p.rstrip("/").rsplit("/", 1)[-1]
    return f"{PATH}/{last}" if last and last != PATH else PATH


def omit_paths(env: dict) -> dict:
    """The envelope with local paths replaced (module invariants)."""
    out = dict(env)
    project = dict(env["project"])
    root = project["root"]
    project["root"] = ROOT
    out["project"] = project
    if env.get("paths"):
        out["paths"] = [{**p, "original": _path(p["original"], root), "logical": _path(p["logical"], root)}
                        for p in env["paths"]]
    attrs = env.get("attrs")
    if attrs:
        out["attrs"] = {k: (_path(v, root) if k in PATH_ATTRS and isinstance(v, str) else v) for k, v in attrs.items()}
    for k in env:
        if k in ("content", "raw") or k.startswith("x_"):
            out[k] = _text(env[k], root)
    return out
