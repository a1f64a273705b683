"""Shell command classification: `command_category`, `command_subcategory`, `git_subcommand`
(reference/capture.md §2.7 and golden-harness.md §6).

Invariants:
- Pure and total: any string gives a category from CATEGORIES and a subcategory token; nothing
  from the command text itself ever comes back except the lowercased git subcommand word.
- A command is split into segments at `&&`, `||`, `&`, `|`, `;` and newlines outside quotes
  (`2>&1` is a redirection, not a separator). The category is the most significant segment's
  (git > test > build > install > network > run > fs > other; git segments by subcommand
  priority). The subcategory follows the chain rule of the taxonomy it comes from: the
  highest-ranked of CHAIN_PRIORITY, else the first segment's.
- `bash -lc …` (any POSIX shell with flags) is unwrapped, so Codex argv commands classify by
  what they run. Only the first MAX_SCAN characters are looked at.
- Beyond the reference (spec/capture.md, "Command categories"): `python/python3 [flags] -m
  MODULE rest` classifies as the segment `MODULE rest` (a module nothing recognises stays
  `run`; `unittest` is a test runner only in this form); `uv/poetry/pipenv/pdm/hatch/rye run X
  …` and `uvx X …` classify as `X …`; `tox` and `nox` are test runners.
- str methods only: this module is on the hook path (no `re`, no `shlex`).
"""

MAX_SCAN = 8192
CATEGORIES = ("git", "test", "build", "install", "network", "run", "fs", "other")
_RANK = {c: i for i, c in enumerate(CATEGORIES)}
GIT_PRIORITY = ("commit", "push", "pull", "merge", "rebase", "cherry-pick", "revert", "reset",
                "checkout", "switch", "stash", "tag", "clone", "fetch", "add", "rm", "mv",
                "branch", "worktree", "status", "log", "diff", "show")
_GIT_RANK = {s: i for i, s in enumerate(GIT_PRIORITY)}
CHAIN_PRIORITY = ("git.commit", "deploy", "git.push", "test.run", "pkg.test", "infra.iac",
                  "infra.k8s", "infra.docker", "github.pr_write", "git.rewrite", "git.branch",
                  "db.client", "pkg.build", "build.sys", "lint.run", "pkg.lint", "pkg.install")
_CHAIN_RANK = {s: i for i, s in enumerate(CHAIN_PRIORITY)}

_WRAPPERS = frozenset(("sudo", "env", "time", "nohup", "exec", "command", "nice"))
_SHELLS = frozenset(("bash", "sh", "zsh", "dash", "fish"))
_RUNNERS = frozenset(("npx", "bunx", "pnpx", "uvx"))
_PYTHONS = frozenset(("python", "python3"))
_ENV_RUNNERS = frozenset(("uv", "poetry", "pipenv", "pdm", "hatch", "rye"))
# options of `uv run` / `poetry run` / `pdm run` / `hatch run` that take the next token as value
_ENV_RUN_VALUE_OPTS = frozenset((
    "--with", "--with-editable", "--with-requirements", "--python", "-p", "--package", "--extra",
    "--group", "--only-group", "--no-group", "--env-file", "--directory", "--project", "--index",
    "--default-index", "--index-url", "--extra-index-url", "-C", "--env", "-e", "--venv", "-w",
    "--python-preference", "--color", "--cache-dir", "--config-file"))
_PKG = frozenset(("npm", "pnpm", "yarn", "bun"))
_PKG_INSTALL = frozenset(("install", "i", "ci", "add", "remove", "rm", "update", "up", "upgrade", "link"))
_SYS_INSTALL = frozenset(("install", "i", "add", "sync", "remove", "uninstall", "upgrade", "update"))


def _names(text: str) -> frozenset:
    return frozenset(text.split())


_PROGRAM_CATEGORY = {}
for _cat, _progs in (
    ("build", "make cmake ninja tsc webpack esbuild rollup gradle gradlew mvn xcodebuild xcodegen"),
    ("test", "jest vitest pytest mocha rspec phpunit playwright cypress ava tox nox"),
    ("run", "node python python3 deno ruby php java uvicorn flask rails ts-node tsx"),
    ("network", "curl wget ssh scp rsync ping nc dig nslookup gh http aws gcloud vercel firebase "
                "supabase netlify fly flyctl heroku kubectl"),
    ("fs", "ls cat head tail sed awk grep rg find fd mkdir rm cp mv touch chmod chown ln pwd cd echo "
           "tree wc sort uniq diff stat du df tar zip unzip which xargs tee cut basename dirname "
           "realpath readlink"),
):
    for _p in _progs.split():
        _PROGRAM_CATEGORY[_p] = _cat
_SYS_PKG = _names("pip pip3 uv poetry brew apt apt-get gem composer conda")

_SUB_BY_HEAD = {}
for _sub, _heads in (
    ("test.run", "pytest jest vitest mocha rspec phpunit tox nox"),
    ("lint.run", "tsc eslint prettier ruff black mypy biome"),
    ("infra.docker", "docker"), ("infra.k8s", "kubectl helm k9s"),
    ("infra.iac", "terraform tofu pulumi"), ("net.request", "curl wget http httpie"),
    ("fs.mutate", "rm mv cp chmod chown"), ("fs.read", "ls cat head tail less more wc tree"),
    ("fs.search", "find grep rg fd ag fzf ack"), ("fs.create", "mkdir touch ln"),
    ("db.client", "supabase psql sqlite3 mysql redis-cli mongo mongosh"),
    ("deploy", "vercel netlify fly gcloud aws eb heroku railway"),
    ("runtime", "python python3 node deno bun ruby go cargo rustc java"),
    ("build.sys", "make cmake gradle mvn sbt ninja"),
    ("shell.builtin", "echo printf env export source alias"),
    ("shell.nav", "cd pwd pushd popd"), ("pkg.system", "brew apt apt-get pacman yum dnf"),
    ("net.transfer", "ssh scp rsync"), ("editor", "open code cursor nano vim emacs subl"),
    ("mobile.expo", "expo"), ("mobile.build", "eas fastlane xcodebuild"),
):
    for _h in _heads.split():
        _SUB_BY_HEAD.setdefault(_h, _sub)
_GIT_SUB = {}
for _sub, _words in (("git.commit", "commit"), ("git.push", "push"), ("git.sync", "pull fetch"),
                     ("git.read", "diff log status show blame"),
                     ("git.rewrite", "rebase merge cherry-pick revert reset"),
                     ("git.branch", "checkout switch branch stash")):
    for _w in _words.split():
        _GIT_SUB[_w] = _sub
_PKG_TARGET = {}
for _sub, _words in (("pkg.test", "test t"), ("pkg.install", "install i ci add remove uninstall"),
                     ("pkg.build", "build tsc typecheck"),
                     ("pkg.lint", "lint format prettier eslint biome"), ("pkg.run", "dev start serve")):
    for _w in _words.split():
        _PKG_TARGET[_w] = _sub
del _cat, _progs, _p, _sub, _heads, _h, _words, _w


# --- command text and segments -------------------------------------------------------------

def command_text(tool_input):
    """The command line a tool input carries: `command` (string, or argv joined with single
    spaces), else `cmd`. None when there is none."""
    if not isinstance(tool_input, dict):
        return None
    for key in ("command", "cmd"):
        v = tool_input.get(key)
        if isinstance(v, str):
            return v
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            return " ".join(v)
    return None


def segments(command: str) -> list:
    """Token lists, one per segment, quotes removed."""
    text = command[:MAX_SCAN]
    if "'" in text or '"' in text or "\\" in text:
        return _split_quoted(text)
    text = text.replace(">&", "> ").replace("&>", " >")
    for sep in ("&&", "||", ";", "|", "&", "\r"):
        if sep in text:
            text = text.replace(sep, "\n")
    return [seg.split() for seg in text.split("\n") if seg and not seg.isspace()]


def _split_quoted(text: str) -> list:
    segs, toks, cur = [], [], []
    quoted = False  # the current token exists even if empty ('')
    i, n = 0, len(text)

    def flush():
        nonlocal cur, quoted
        if cur or quoted:
            toks.append("".join(cur))
        cur, quoted = [], False

    while i < n:
        c = text[i]
        if c == "'":
            j = text.find("'", i + 1)
            cur.append(text[i + 1:] if j < 0 else text[i + 1:j])
            quoted = True
            i = n if j < 0 else j + 1
        elif c == '"':
            i += 1
            quoted = True
            while i < n:
                j = text.find('"', i)
                k = text.find("\\", i, j if j >= 0 else n)
                if k >= 0:
                    cur.append(text[i:k])
                    cur.append(text[k + 1:k + 2])
                    i = k + 2
                    continue
                cur.append(text[i:] if j < 0 else text[i:j])
                i = n if j < 0 else j + 1
                break
        elif c == "\\":
            if text[i + 1:i + 2] not in ("\n", ""):
                cur.append(text[i + 1])
            i += 2
        elif c in " \t\r":
            flush()
            i += 1
        elif c in "\n;|&":
            if c == "&" and (text[i - 1:i] == ">" or text[i + 1:i + 2] == ">"):
                cur.append(c)
                i += 1
                continue
            flush()
            if toks:
                segs.append(toks)
            toks = []
            i += 2 if text[i + 1:i + 2] == c and c in "|&" else 1
        else:
            cur.append(c)
            i += 1
    flush()
    if toks:
        segs.append(toks)
    return segs


def _base(token: str) -> str:
    return token[token.rfind("/") + 1:].lower()


def _is_assignment(token: str) -> bool:
    k = token.find("=")
    if k <= 0:
        return False
    name = token[:k]
    return name.isascii() and not name[0].isdigit() and name.replace("_", "a").isalnum()


def _program_index(tokens, wrappers=_WRAPPERS) -> int:
    """Index of the program: leading NAME=value assignments and wrappers (with their flags) skipped."""
    i, n = 0, len(tokens)
    while i < n:
        if _is_assignment(tokens[i]):
            i += 1
        elif _base(tokens[i]) in wrappers and i + 1 < n:
            i += 1
            while i < n and tokens[i].startswith("-"):
                i += 1
        else:
            break
    return i


def _after_flags(tokens) -> list:
    i = 0
    while i < len(tokens) and tokens[i].startswith("-"):
        i += 1
    return tokens[i:]


def _nested_script(inner) -> str | None:
    """`bash -c 'a && b'` gives one token holding a whole script."""
    if len(inner) == 1:
        t = inner[0]
        for c in " \t\n;|&":
            if c in t:
                return t
    return None


def _python_module(rest):
    """`python [flags] -m MODULE args` → [MODULE, *args]; None for a script, `-c`, stdin, or no
    `-m` (beyond the reference)."""
    i, n = 0, len(rest)
    while i < n:
        t = rest[i]
        if t == "-m":
            return rest[i + 1:] or None
        if t.startswith("-m"):
            return [t[2:], *rest[i + 1:]]
        if t in ("-W", "-X"):
            i += 2
        elif t.startswith("-c") or t in ("-", "--") or not t.startswith("-"):
            return None
        else:
            i += 1
    return None


def _env_run_rest(prog, rest):
    """`uv run [opts] X args` (poetry, pipenv, pdm, hatch, rye) → [X, *args]; None for any other
    subcommand (beyond the reference)."""
    i, n = 0, len(rest)
    while i < n and rest[i].startswith("-"):
        i += 2 if rest[i] in _ENV_RUN_VALUE_OPTS else 1
    if i >= n or rest[i].lower() != "run":
        return None
    i += 1
    while i < n and rest[i].startswith("-"):
        if rest[i] == "--":
            i += 1
            break
        i += 2 if rest[i] in _ENV_RUN_VALUE_OPTS else 1
    inner = rest[i:]
    if inner and prog == "hatch" and ":" in inner[0]:  # `hatch run ENV:SCRIPT`
        inner = [inner[0].split(":", 1)[1], *inner[1:]]
    return inner or None


# --- command_category ----------------------------------------------------------------------

def _git_subcommand(args) -> str | None:
    i = 0
    while i < len(args):
        t = args[i]
        if t in ("-C", "-c", "--git-dir", "--work-tree"):
            i += 2
        elif t.startswith("-"):
            i += 1
        else:
            return t.lower()
    return None


def _pkg_category(args) -> str:
    if not args:
        return "install"
    sub = args[0].lower()
    if sub in _PKG_INSTALL:
        return "install"
    if sub in ("test", "t"):
        return "test"
    if sub == "build":
        return "build"
    if sub in ("run", "run-script"):
        script = args[1].lower() if len(args) > 1 else ""
        if script.startswith("test") or ":test" in script or "test:" in script:
            return "test"
        if script.startswith("build") or ":build" in script:
            return "build"
        return "run"
    if sub.startswith("test"):
        return "test"
    if sub.startswith("build"):
        return "build"
    if sub.startswith(("lint", "format")):
        return "other"
    return "run"


_CARGO = {"test": "test", "nextest": "test", "build": "build", "check": "build", "clippy": "build",
          "doc": "build", "run": "run", "add": "install", "install": "install", "update": "install",
          "fetch": "install"}
_GO = {"test": "test", "build": "build", "vet": "build", "generate": "build", "run": "run",
       "get": "install", "mod": "install", "install": "install"}
_DOCKER = {"build": "build", "run": "run", "compose": "run", "exec": "run", "up": "run",
           "push": "network", "pull": "network", "login": "network"}


def _segment_category(tokens, depth=0) -> tuple:
    """(category, git subcommand or None) of one segment."""
    i = _program_index(tokens)
    if i >= len(tokens) or depth > 4:
        return ("other", None)
    first = tokens[i]
    prog = _base(first)
    rest = tokens[i + 1:]
    args = [t for t in rest if not t.startswith("-")]
    sub = args[0].lower() if args else None
    if prog == "git":
        return ("git", _git_subcommand(rest))
    if prog in _SHELLS:
        inner = _after_flags(rest)
        if not inner:
            return ("run", None)
        script = _nested_script(inner)
        if script is not None:
            return _best(segments(script), depth + 1)
        return _segment_category(inner, depth + 1)
    if prog in _RUNNERS:
        return _segment_category(_after_flags(rest), depth + 1)
    if prog in _PYTHONS:
        module = _python_module(rest)
        if module is not None:
            if _base(module[0]) == "unittest":
                return ("test", None)
            cat = _segment_category(module, depth + 1)
            return cat if cat[0] != "other" else ("run", None)
    if prog in _ENV_RUNNERS:
        inner = _env_run_rest(prog, rest)
        if inner is not None:
            return _segment_category(inner, depth + 1)
    if prog in _PKG:
        return (_pkg_category(args), None)
    if prog == "cargo":
        return (_CARGO.get(sub, "other"), None)
    if prog == "go":
        return (_GO.get(sub, "other"), None)
    if prog in ("swift", "dotnet", "mix"):
        return (sub if sub in ("test", "build", "run") else "other", None)
    if prog in ("docker", "podman"):
        return (_DOCKER.get(sub, "other"), None)
    if prog in _SYS_PKG:
        return ("install" if sub in _SYS_INSTALL else "other", None)
    cat = _PROGRAM_CATEGORY.get(prog)
    if cat is not None:
        return (cat, None)
    if first.startswith("./") or prog.endswith((".sh", ".py", ".js")):
        return ("run", None)
    return ("other", None)


def _best(segs, depth=0) -> tuple:
    best, best_key = ("other", None), None
    for seg in segs:
        cat, git_sub = _segment_category(seg, depth)
        key = (_RANK[cat], _GIT_RANK.get(git_sub, len(GIT_PRIORITY) + (git_sub is None)))
        if best_key is None or key < best_key:
            best, best_key = (cat, git_sub), key
    return best


# --- command_subcategory -------------------------------------------------------------------

def _segment_subcategory(tokens, depth=0) -> str:
    i = _program_index(tokens)
    if i >= len(tokens) or depth > 4:
        return ""
    head = _base(tokens[i])
    rest = tokens[i + 1:]
    args = [t for t in rest if not t.startswith("-")]
    sub = args[0].lower() if args else ""
    if head == "git":
        return _GIT_SUB.get(_git_subcommand(rest), "git.other")
    if head in _SHELLS:
        inner = _after_flags(rest)
        script = _nested_script(inner)
        if script is not None:
            return _chain_subcategory(segments(script), depth + 1)
        return _segment_subcategory(inner, depth + 1) if inner else "unknown"
    if head in _RUNNERS:
        return _segment_subcategory(_after_flags(rest), depth + 1)
    if head in _PYTHONS:
        module = _python_module(rest)
        if module is not None:
            if _base(module[0]) == "unittest":
                return "test.run"
            inner = _segment_subcategory(module, depth + 1)
            return inner if inner not in ("", "unknown") else "runtime"
    if head in _ENV_RUNNERS:
        inner = _env_run_rest(head, rest)
        if inner is not None:
            return _segment_subcategory(inner, depth + 1) or "unknown"
    if head == "gh":
        sub2 = args[1].lower() if len(args) > 1 else ""
        return "github.pr_write" if sub == "pr" and sub2 in ("create", "merge") else "github.other"
    if head in _PKG:
        target = (args[1].lower() if len(args) > 1 else "") if sub == "run" else sub
        return _PKG_TARGET.get(target) or _PKG_TARGET.get(target.split(":", 1)[0], "pkg.other")
    if head in ("go", "cargo") and sub == "test":
        return "test.run"
    return _SUB_BY_HEAD.get(head, "unknown")


def _chain_subcategory(segs, depth=0) -> str:
    subs = [_segment_subcategory(s, depth) for s in segs]
    if not subs:
        return "unknown"
    ranked = [s for s in subs if s in _CHAIN_RANK]
    if len(subs) > 1 and ranked:
        return min(ranked, key=_CHAIN_RANK.__getitem__)
    return subs[0] or "unknown"


def classify(command: str) -> tuple:
    """(command_category, command_subcategory, git_subcommand or None) of a command line."""
    segs = segments(command)
    if not segs:
        return ("other", "unknown", None)
    cat, git_sub = _best(segs)
    return (cat, _chain_subcategory(segs), git_sub if cat == "git" else None)
