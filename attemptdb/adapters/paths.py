"""Portable paths, home elision, file facts and apply_patch paths (reference/capture.md §2.8,
golden-harness.md §6).

Invariants:
- `portable(raw, root)` gives the PortablePath of Event v1 `{original, logical, repo_relative?,
  drive?, unc?}`. `logical` uses forward slashes, collapsed duplicate slashes (a leading UNC
  `//` kept) and an upper-case drive letter; `repo_relative` is computed against the project
  root before elision and is absent outside the root, at the root, or for `..` paths.
- Neither `original` nor `logical` of a returned path names a home directory: `/home/<u>/…`,
  `/Users/<u>/…` and `<D>:/Users/<u>/…` (either separator) become `~/…`, exactly the home
  becomes `~`. `elide_home` is pattern-based, never looks at the environment.
- str methods only (hook path).
"""

_HOME_ROOTS = ("/home/", "/Users/")
_TEST_DIRS = ("/tests/", "/test/", "/__tests__/", "/spec/", "/specs/")
_TEST_MARKS = (".test.", ".spec.", "_test.", "_spec.")
_CONFIG_EXTS = frozenset("json yaml yml toml ini cfg conf env properties plist lock".split())
_CONFIG_NAMES = frozenset(("dockerfile", "makefile", "justfile", "procfile", ".gitignore",
                           ".gitattributes", ".editorconfig", ".npmrc", ".nvmrc", ".dockerignore",
                           "cargo.toml", "package.json"))
_DOC_EXTS = frozenset("md mdx rst txt adoc".split())
_DOC_STEMS = frozenset("readme changelog license licence contributing authors notice".split())
_PATCH_MARKERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


def _home_prefix_len(p: str) -> int:
    """Length of the home directory prefix of a forward-slash path (0 when none)."""
    start = 0
    if len(p) > 2 and p[1] == ":" and p[0].isalpha():
        if not p.startswith("/Users/", 2):
            return 0
        start, prefix = 2, "/Users/"
    elif p.startswith(_HOME_ROOTS[0]):
        prefix = _HOME_ROOTS[0]
    elif p.startswith(_HOME_ROOTS[1]):
        prefix = _HOME_ROOTS[1]
    else:
        return 0
    name_at = start + len(prefix)
    end = p.find("/", name_at)
    if end < 0:
        end = len(p)
    return end if end > name_at else 0


def elide_home(path: str) -> str:
    """`/home/dev/x` → `~/x`, `/home/dev` → `~`; other paths unchanged. Separators as given."""
    n = _home_prefix_len(path.replace("\\", "/"))
    if not n:
        return path
    rest = path[n:]
    return "~" + rest if rest.strip("/\\") else "~"


def names_home(path: str) -> bool:
    p = path.replace("\\", "/")
    return "/home/" in p or "/Users/" in p


def logical_form(raw: str) -> tuple:
    """(logical, drive or None, unc) of a raw path text."""
    s = raw.strip()
    unc = False
    if s.startswith("\\\\?\\UNC\\"):
        s, unc = "//" + s[8:], True
    elif s.startswith("\\\\?\\"):
        s = s[4:]
    elif s.startswith("\\\\"):
        unc = True
    s = s.replace("\\", "/")
    lead = "//" if unc and s.startswith("//") else ""
    body = s[len(lead):]
    while "//" in body:
        body = body.replace("//", "/")
    s = lead + body
    drive = None
    if len(s) >= 2 and s[1] == ":" and s[0].isascii() and s[0].isalpha():
        drive = s[0].upper()
        s = drive + s[1:]
    return s, drive, unc


def _is_absolute(logical: str, drive) -> bool:
    return logical.startswith("/") or drive is not None


def repo_relative(logical: str, drive, root: str) -> str | None:
    if not _is_absolute(logical, drive):
        rel = logical
    else:
        r, _, _ = logical_form(root) if root else ("", None, False)
        r = r.rstrip("/")
        if not r or not logical.startswith(r + "/"):
            return None
        rel = logical[len(r) + 1:]
    if not rel or rel == "." or rel == ".." or rel.startswith("../") or "/../" in rel:
        return None
    return rel


def portable(raw, root: str) -> dict | None:
    """The PortablePath of a raw path text, home-elided; None for a non-string or blank text."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    logical, drive, unc = logical_form(raw)
    out = {"original": elide_home(raw), "logical": elide_home(logical)}
    if names_home(out["original"]):
        out["original"] = out["logical"]
    rel = repo_relative(logical, drive, root)
    if rel is not None:
        out["repo_relative"] = rel
    if drive is not None:
        out["drive"] = drive
    if unc:
        out["unc"] = True
    return out


# --- file facts ----------------------------------------------------------------------------

def extension(logical: str) -> str | None:
    name = logical[logical.rfind("/") + 1:]
    dot = name.rfind(".")
    if dot <= 0 or dot == len(name) - 1:
        return None
    return name[dot + 1:].lower()


def file_facts(logical: str) -> tuple:
    """(ext or None, is_test, is_config, is_doc) of a logical path."""
    low = logical.lower()
    name = low[low.rfind("/") + 1:]
    ext = extension(low)
    stem = name[: len(name) - len(ext) - 1] if ext else name
    slashed = low if low.startswith("/") else "/" + low
    is_test = (any(d in slashed for d in _TEST_DIRS) or name.startswith("test_")
               or any(m in name for m in _TEST_MARKS))
    is_config = (ext in _CONFIG_EXTS or name in _CONFIG_NAMES or name.startswith(".env")
                 or ".config." in name or name.startswith((".eslintrc", ".prettierrc", ".babelrc")))
    is_doc = ext in _DOC_EXTS or stem in _DOC_STEMS
    return ext, is_test, is_config, is_doc


# --- apply_patch ---------------------------------------------------------------------------

def patch_summary(text: str) -> tuple:
    """(paths in order of appearance, lines added, lines removed) of an apply_patch text."""
    files, added, removed = [], 0, 0
    for line in text.splitlines():
        if line.startswith("*** "):
            for marker in _PATCH_MARKERS:
                if line.startswith(marker):
                    p = line[len(marker):].strip()
                    if p:
                        files.append(p)
                    break
        elif line.startswith("+"):
            if not line.startswith("+++ "):
                added += 1
        elif line.startswith("-"):
            if not line.startswith("--- "):
                removed += 1
    return files, added, removed


def looks_like_patch(text) -> bool:
    return isinstance(text, str) and text.lstrip().startswith("*** Begin Patch")
