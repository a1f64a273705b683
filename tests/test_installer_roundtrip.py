"""`attempt hook install` then `attempt hook uninstall` gives the user's config back as it was:
what install created (a `hooks` object, an event array, Cursor's `"version": 1`, the file itself)
goes, what the user had (even empty) stays, and what the user added meanwhile stays."""

import json
import os
import tomllib

import pytest
from test_installer import EXE, REAL, STYLES, make_home, styled

from attemptdb.installer import agents, fileops, install, jsonstyle, mcpconfig, mcpentry, merge

PROVIDERS = sorted(REAL)


def _write(provider, data: bytes) -> str:
    path = agents.AGENTS[provider].config_path()
    with open(path, "wb") as f:
        f.write(data)
    return path


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _listing(path):
    """The config's folder, less our backups."""
    return sorted(n for n in os.listdir(os.path.dirname(path)) if ".attemptdb.bak-" not in n)


def _install(provider, exe=EXE):
    r = install.install([provider], executable=exe, verify=False)
    assert r.ok, [a.error for a in r.actions]
    return r.actions[0]


def _uninstall(provider):
    r = install.uninstall([provider])
    assert r.ok, [a.error for a in r.actions]
    return r.actions[0]


def _users_own(provider):
    """The agent's real config, with its `hooks` taken out (Cursor keeps its `version`)."""
    return {k: v for k, v in REAL[provider].items() if k != "hooks"}


def _first_event(provider):
    return agents.AGENTS[provider].events[0]


# --- 1. an empty object or array the user had ----------------------------------------------------

@pytest.mark.parametrize("style", ["2sp", "crlf-tab-no-final"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_empty_hooks_object_the_user_had_survives_install_then_uninstall(home, provider, style):
    """Uninstall dropped the user's own `"hooks": {}` (no comment in it): it came back without."""
    make_home(home, provider)
    original = styled(dict(_users_own(provider), hooks={}), **STYLES[style])
    path = _write(provider, original)
    assert _install(provider).outcome == merge.INSTALLED
    assert _uninstall(provider).outcome == merge.REMOVED
    assert _read(path) == original
    assert _listing(path) == [os.path.basename(path)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_empty_event_array_the_user_had_survives_install_then_uninstall(home, provider):
    """The user's `"<event>": []` for an event we subscribe was dropped by uninstall."""
    make_home(home, provider)
    doc = json.loads(json.dumps(REAL[provider]))
    doc["hooks"][_first_event(provider)] = []
    original = styled(doc, 2, False, True)
    path = _write(provider, original)
    _install(provider)
    assert json.loads(_read(path))["hooks"][_first_event(provider)]  # filled by install
    _uninstall(provider)
    assert _read(path) == original


# --- 2. Cursor's "version" ----------------------------------------------------------------------

@pytest.mark.parametrize("style", sorted(STYLES))
def test_cursor_version_install_added_is_removed_by_uninstall(home, style):
    """Install adds `"version": 1` to a Cursor hooks.json without one; uninstall kept it."""
    make_home(home, "cursor")
    original = styled({"hooks": REAL["cursor"]["hooks"]}, **STYLES[style])
    path = _write("cursor", original)
    _install("cursor")
    doc = json.loads(_read(path))
    assert list(doc)[0] == "version" and doc["version"] == 1
    _uninstall("cursor")
    assert _read(path) == original


def test_cursor_version_the_user_had_or_changed_stays(home):
    make_home(home, "cursor")
    had = styled({"version": 1, "hooks": {}}, 2, False, True)
    path = _write("cursor", had)
    _install("cursor")
    _uninstall("cursor")
    assert _read(path) == had
    # install added it, then the user changed it: it is theirs now
    original = styled({"hooks": REAL["cursor"]["hooks"]}, 2, False, True)
    _write("cursor", original)
    _install("cursor")
    _write("cursor", _read(path).replace(b'"version": 1', b'"version": 2'))
    _uninstall("cursor")
    doc = json.loads(_read(path))
    assert doc == {"version": 2, "hooks": REAL["cursor"]["hooks"]}


# --- 3. a file install created ------------------------------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_config_file_install_created_is_removed_by_uninstall(home, provider):
    """It stayed behind as `{}` (Cursor: `{"version": 1}`). One the user wrote to meanwhile
    stays, with what they wrote (Cursor: and the `version` their hook is read under)."""
    make_home(home, provider)
    path = agents.AGENTS[provider].config_path()
    before = _listing(path)
    assert _install(provider).outcome == merge.INSTALLED
    assert os.path.isfile(path)
    a = _uninstall(provider)
    assert a.outcome == merge.REMOVED and any("install had created it" in n for n in a.notes)
    assert not os.path.exists(path)
    assert _listing(path) == before
    assert fileops.backups(path)  # the bytes it held are kept, as for every change

    _install(provider)
    doc = json.loads(_read(path))
    doc["hooks"]["MyEvent"] = [{"command": "mine.sh"}]
    _write(provider, json.dumps({"zz_user": True, **doc}, indent=2).encode())
    _uninstall(provider)
    kept = {"version": 1} if provider == "cursor" else {}
    assert json.loads(_read(path)) == {"zz_user": True, **kept, "hooks": {"MyEvent": [{"command": "mine.sh"}]}}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_existing_empty_file_or_empty_object_stays(home, provider):
    for original in (b"{}\n", b"", b"  \n"):
        make_home(home, provider)
        path = _write(provider, original)
        _install(provider)
        _uninstall(provider)
        assert _read(path) == original, original


# --- what install created, across reinstalls ----------------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_what_install_created_is_remembered_across_an_update(home, provider):
    """A reinstall for a moved executable (UPDATED) keeps what the first install created: the
    file, and (with a `hooks` object the user had) the event arrays but not `hooks`."""
    make_home(home, provider)
    path = agents.AGENTS[provider].config_path()
    moved = type(EXE)(["/opt/attemptdb2/bin/attempt"], "test")
    _install(provider)
    assert _install(provider, moved).outcome == merge.UPDATED
    assert _install(provider, moved).outcome == merge.CURRENT
    _uninstall(provider)
    assert not os.path.exists(path)
    original = styled(dict(_users_own(provider), hooks={}), 4, False, True)
    _write(provider, original)
    _install(provider)
    assert _install(provider, moved).outcome == merge.UPDATED
    _uninstall(provider)
    assert _read(path) == original


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_users_empty_hooks_after_a_manual_removal_is_theirs(home, provider):
    """Install, the user takes our entries out by hand and keeps `"hooks": {}`, installs again:
    that `hooks` object is the user's now and uninstall leaves it."""
    make_home(home, provider)
    path = _write(provider, styled(_users_own(provider), 2, False, True))
    _install(provider)
    mine = styled(dict(_users_own(provider), hooks={}), 2, False, True)
    _write(provider, mine)
    _install(provider)
    _uninstall(provider)
    assert _read(path) == mine


def test_an_event_array_install_created_stays_when_the_user_added_to_it(home):
    """An event array install created and the user then filled stays, beside the user's own
    empty one; the event arrays install created and nobody filled go."""
    make_home(home, "claude_code")
    original = styled(dict(_users_own("claude_code"), hooks={"PreCompact": []}), 2, False, True)
    path = _write("claude_code", original)
    _install("claude_code")
    doc = json.loads(_read(path))
    doc["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "say done"}]})
    _write("claude_code", json.dumps(doc, indent=2).encode())
    _uninstall("claude_code")
    assert json.loads(_read(path)) == dict(_users_own("claude_code"), hooks={
        "PreCompact": [], "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]})


# --- the guarantees that stay ---------------------------------------------------------------------

def test_a_dry_run_and_a_refused_write_remember_nothing(home, monkeypatch):
    make_home(home, "claude_code")
    original = styled(dict(_users_own("claude_code"), hooks={}), 2, False, True)
    path = _write("claude_code", original)
    install.install(["claude"], executable=EXE, verify=False, dry_run=True)
    assert _listing(path) == ["settings.json"]
    real = merge.plan_install

    def agent_writes_meanwhile(*args, **kw):
        res = real(*args, **kw)
        _write("claude_code", original + b" ")  # the agent wrote the file meanwhile
        return res

    monkeypatch.setattr(merge, "plan_install", agent_writes_meanwhile)
    r = install.install(["claude"], executable=EXE, verify=False)
    assert r.actions[0].error[0] == "installer.config_changed"
    assert _listing(path) == ["settings.json"]
    monkeypatch.setattr(merge, "plan_install", real)
    _write("claude_code", original)
    _install("claude_code")
    assert install.uninstall(["claude"], dry_run=True).actions[0].outcome == merge.REMOVED
    assert _read(path) != original
    _uninstall("claude_code")
    assert _read(path) == original and _listing(path) == ["settings.json"]


def test_the_cli_round_trip_gives_back_the_cursor_file_and_removes_a_created_one(home):
    from conftest import run_attempt
    make_home(home, "cursor", "gemini_cli")
    original = b'{\n  "hooks": {}\n}\n'
    path = _write("cursor", original)
    env = {"HOME": str(home)}
    p = run_attempt(["hook", "install", "-p", "cursor", "-p", "gemini-cli", "--no-verify"], env=env)
    assert p.returncode == 0, p.stderr
    p = run_attempt(["hook", "uninstall", "-p", "cursor", "-p", "gemini-cli"], env=env)
    assert p.returncode == 0, p.stderr
    assert _read(path) == original
    assert not os.path.exists(agents.AGENTS["gemini_cli"].config_path())


def test_a_dangling_dotfiles_link_install_wrote_through_dangles_again(home, tmp_path):
    """~/.claude/settings.json links to a dotfiles file not written yet: install writes it, and
    uninstall removes that file and keeps the link, as it was."""
    make_home(home, "claude_code")
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    link = agents.AGENTS["claude_code"].config_path()
    os.symlink(str(dotfiles / "settings.json"), link)
    _install("claude_code")
    assert json.loads((dotfiles / "settings.json").read_bytes())["hooks"]
    _uninstall("claude_code")
    assert os.path.islink(link) and os.readlink(link) == str(dotfiles / "settings.json")
    assert os.listdir(dotfiles) == []
    assert _listing(link) == ["settings.json"]


@pytest.mark.parametrize("planted", ["garbage", "link", "bad-part"])
def test_a_record_that_cannot_be_trusted_is_no_record(home, tmp_path, planted):
    """A record that is not ours as we write it (unparsable, a link, a part we never write) is
    ignored: uninstall removes our entries and what only they filled, leaves the link's target
    alone, and takes the record away."""
    make_home(home, "cursor")
    original = styled({"hooks": REAL["cursor"]["hooks"]}, 2, False, True)
    path = _write("cursor", original)
    _install("cursor")
    rec = path + ".attemptdb.created"
    assert os.path.isfile(rec)
    os.unlink(rec)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"format": 1, "file": "absent", "created": [{"path": ["hooks"], "kind": "object"}]}))
    if planted == "garbage":
        open(rec, "w").write("{not json")
    elif planted == "link":
        os.symlink(str(elsewhere), rec)
    else:
        open(rec, "w").write(json.dumps({"format": 1, "file": "absent", "created": [{"path": ["hooks"], "kind": "x"}]}))
    _uninstall("cursor")
    doc = json.loads(_read(path))
    assert doc == {"version": 1, "hooks": REAL["cursor"]["hooks"]}  # as an older install's uninstall did
    assert not os.path.lexists(rec)
    assert json.loads(elsewhere.read_text())["file"] == "absent"


# --- `--mcp`: the MCP server's config ------------------------------------------------------------

MCP_JSON = ["claude_code", "cursor", "gemini_cli"]  # Codex's config.toml: a marked block, see below
THEIRS = {"command": "npx", "args": ["@playwright/mcp@latest"]}


def _mcp_path(provider):
    return mcpentry.config_path(agents.AGENTS[provider])


def _write_at(path, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return path


def _register(provider, exe=EXE, remove=False, dry_run=False):
    r = mcpconfig.register([provider], executable=exe, remove=remove, dry_run=dry_run)[0]
    assert not r.failed, r.error
    return r


def _ours(provider, path):
    """(our hooks, our MCP server) in the config at `path`."""
    agent = agents.AGENTS[provider]
    root = merge.parse_config(agent, jsonstyle.decode(_read(path)))
    server = root.to_python().get("mcpServers", {}).get("attemptdb")
    return bool(merge.find_ours(agent, root)), mcpentry.is_ours(server)


@pytest.mark.parametrize("style", ["2sp", "crlf-tab-no-final"])
@pytest.mark.parametrize("provider", MCP_JSON)
def test_an_empty_mcpservers_the_user_had_survives_mcp_install_then_uninstall(home, provider, style):
    """`hook uninstall --mcp` dropped the user's own `"mcpServers": {}`."""
    make_home(home, provider)
    path = _mcp_path(provider)
    original = styled({"numStartups": 3, "mcpServers": {}}, **STYLES[style])
    _write_at(path, original)
    before = _listing(path)
    assert _register(provider).outcome == merge.INSTALLED
    assert json.loads(_read(path))["mcpServers"]["attemptdb"]["args"] == ["mcp"]
    assert _register(provider, remove=True).outcome == merge.REMOVED
    assert _read(path) == original
    assert _listing(path) == before  # and no record left beside it


@pytest.mark.parametrize("provider", MCP_JSON)
def test_an_mcp_config_file_install_created_is_removed_by_uninstall(home, provider):
    """It stayed behind as `{}` (e.g. ~/.cursor/mcp.json). One the user wrote to meanwhile stays,
    with what they wrote; an `mcpServers` install created that they added a server to stays."""
    make_home(home, provider)
    path = _mcp_path(provider)
    before = _listing(path)
    _register(provider)
    assert os.path.isfile(path)
    dry = _register(provider, remove=True, dry_run=True)
    assert dry.outcome == merge.REMOVED and any("would remove" in n for n in dry.notes)
    assert os.path.isfile(path)
    r = _register(provider, remove=True)
    assert r.outcome == merge.REMOVED and any("install had created it" in n for n in r.notes)
    assert not os.path.exists(path)
    assert _listing(path) == before
    assert fileops.backups(path)  # the bytes it held are kept, as for every change

    _register(provider)
    doc = json.loads(_read(path))
    doc["mcpServers"]["playwright"] = THEIRS
    _write_at(path, json.dumps({"zz_user": True, **doc}, indent=2).encode())
    _register(provider, remove=True)
    assert json.loads(_read(path)) == {"zz_user": True, "mcpServers": {"playwright": THEIRS}}


@pytest.mark.parametrize("provider", MCP_JSON)
def test_an_existing_empty_or_blank_mcp_config_stays(home, provider):
    for original in (b"{}\n", b"", b"  \n", b"\xef\xbb\xbf{}"):
        make_home(home, provider)
        path = _write_at(_mcp_path(provider), original)
        before = _listing(path)
        _register(provider)
        _register(provider, remove=True)
        assert _read(path) == original, original
        assert _listing(path) == before


GEMINI_ORIGINALS = {
    "none": None,
    "empty-object": b"{}\n",
    "empty-file": b"",
    "jsonc": b'{\n  // mine\n  "theme": "GitHub",\n  "general": {"vimMode": true} /* on */\n}',
    "own-empties": b'{\r\n\t"hooks": {},\r\n\t"mcpServers": {}\r\n}\r\n',
}
INSTALLS = {"hooks": lambda: _install("gemini_cli"), "mcp": lambda: _register("gemini_cli")}
UNINSTALLS = {"hooks": lambda: _uninstall("gemini_cli"), "mcp": lambda: _register("gemini_cli", remove=True)}
ORDERS = [  # each install before its uninstall
    [("install", "hooks"), ("install", "mcp"), ("uninstall", "hooks"), ("uninstall", "mcp")],
    [("install", "hooks"), ("install", "mcp"), ("uninstall", "mcp"), ("uninstall", "hooks")],
    [("install", "mcp"), ("install", "hooks"), ("uninstall", "hooks"), ("uninstall", "mcp")],
    [("install", "mcp"), ("install", "hooks"), ("uninstall", "mcp"), ("uninstall", "hooks")],
    [("install", "hooks"), ("uninstall", "hooks"), ("install", "mcp"), ("uninstall", "mcp")],
    [("install", "mcp"), ("uninstall", "mcp"), ("install", "hooks"), ("uninstall", "hooks")],
]


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: "-".join(w[0] + w[1][0] for w in o))
def test_gemini_settings_holding_hooks_and_mcp_come_back_whatever_the_order(home, order):
    """Gemini CLI's settings.json holds both our hooks and our MCP server, both installs write
    it, and one record lists what each created: each uninstall takes back only its own parts,
    and the file goes only when neither left anything in it."""
    make_home(home, "gemini_cli")
    path = agents.AGENTS["gemini_cli"].config_path()
    assert _mcp_path("gemini_cli") == path
    for name, original in GEMINI_ORIGINALS.items():
        if original is not None:
            _write_at(path, original)
        before = _listing(path)
        live = set()
        for step, which in order:
            (INSTALLS if step == "install" else UNINSTALLS)[which]()
            live.symmetric_difference_update({which})
            if live:  # the other install's entries are still there, and the file with them
                assert _ours("gemini_cli", path) == ("hooks" in live, "mcp" in live), name
        if original is None:
            assert not os.path.exists(path), name
        else:
            assert _read(path) == original, name
        assert _listing(path) == before, name  # no record left beside it
        if original is not None:
            os.unlink(path)


def test_gemini_what_the_user_took_out_by_hand_is_not_taken_back_for_it(home):
    """The other install's part of the record counts only while its entries are there: a
    settings.json install created, with the hooks taken out by hand, goes with the MCP server's
    uninstall; one whose MCP server the user took out by hand (leaving `{}`) is theirs, and the
    hooks' install then uninstall leaves it."""
    make_home(home, "gemini_cli")
    path = agents.AGENTS["gemini_cli"].config_path()
    before = _listing(path)
    _install("gemini_cli")
    _register("gemini_cli")
    doc = jsonstyle.parse(jsonstyle.decode(_read(path)), allow_comments=True).to_python()
    del doc["hooks"]
    _write_at(path, json.dumps(doc, indent=2).encode())
    assert _uninstall("gemini_cli").outcome == merge.NOT_INSTALLED
    _register("gemini_cli", remove=True)
    assert not os.path.exists(path) and _listing(path) == before

    _register("gemini_cli")
    _write_at(path, b"{}\n")  # our server taken out by hand: what is left is the user's
    _install("gemini_cli")
    _uninstall("gemini_cli")
    assert _read(path) == b"{}\n"
    assert _listing(path) == before + ["settings.json"]


@pytest.mark.parametrize("original", [None, b'{\n  "hooks": {},\n  "mcpServers": {}\n}\n'])
def test_the_cli_round_trip_with_mcp_gives_back_gemini_and_cursor_configs(home, original):
    from conftest import run_attempt
    make_home(home, "cursor", "gemini_cli")
    gemini, cursor = agents.AGENTS["gemini_cli"].config_path(), _mcp_path("cursor")
    if original is not None:
        _write_at(gemini, original)
        _write_at(cursor, original.replace(b'  "hooks": {},\n', b""))
    before = {p: _listing(p) for p in (gemini, cursor)}
    env = {"HOME": str(home)}
    p = run_attempt(["hook", "install", "-p", "cursor", "-p", "gemini-cli", "--mcp", "--no-verify"], env=env)
    assert p.returncode == 0, p.stderr
    assert _ours("gemini_cli", gemini) == (True, True)
    p = run_attempt(["hook", "uninstall", "-p", "cursor", "-p", "gemini-cli", "--mcp"], env=env)
    assert p.returncode == 0, p.stderr
    for path in (gemini, cursor):
        if original is None:
            assert not os.path.exists(path)
        else:
            assert _read(path) == (original if path == gemini else original.replace(b'  "hooks": {},\n', b""))
        assert _listing(path) == before[path]


# --- Codex's config.toml: the hooks' feature flag and `--mcp`'s server table --------------------

CODEX_ORIGINALS = {
    "none": None,
    "empty-file": b"",
    "newline-only": b"\n",
    "blank-lines-crlf": b"\r\n\r\n",
    "settings": b'model = "gpt-5-codex"\n\n[projects."/home/u/app"]\ntrust_level = "trusted"\n',
    "no-final-newline": b'model = "gpt-5-codex"',
    "own-empty-features": b"[features]\n",
    "own-features-crlf": b'model = "o3"\r\n\r\n[features]\r\nweb_search = true\r\n',
    "own-mcp-servers": b'[mcp_servers]\n\n[mcp_servers.docs]\ncommand = "npx"\nargs = ["-y", "docs"]\n',
}
CODEX_INSTALLS = {"hooks": lambda: _install("codex"), "mcp": lambda: _register("codex")}
CODEX_UNINSTALLS = {"hooks": lambda: _uninstall("codex"), "mcp": lambda: _register("codex", remove=True)}


def _codex_toml():
    return agents.AGENTS["codex"].settings_path()


def _codex_ours(path):
    """(our feature flag, our MCP server) in config.toml."""
    text = _read(path).decode()
    return "hooks = true  # added by attemptdb" in text, "[mcp_servers.attemptdb]" in text


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: "-".join(w[0] + w[1][0] for w in o))
def test_codex_config_toml_comes_back_whatever_the_order(home, order):
    """Both the hooks' install (`[features] hooks = true`) and `--mcp`'s (`[mcp_servers.attemptdb]`)
    write config.toml: an empty or blank one came back deleted; whatever the order, each
    uninstall takes back only its own lines, the file goes only when it did not exist and
    neither left anything in it, and a `[features]` / `[mcp_servers]` of the user's stays."""
    make_home(home, "codex")
    path = _codex_toml()
    assert _mcp_path("codex") == path
    for name, original in CODEX_ORIGINALS.items():
        if original is not None:
            _write_at(path, original)
        before = _listing(path)
        live = set()
        for step, which in order:
            (CODEX_INSTALLS if step == "install" else CODEX_UNINSTALLS)[which]()
            live.symmetric_difference_update({which})
            if live:
                assert _codex_ours(path) == ("hooks" in live, "mcp" in live), (name, order)
        if original is None:
            assert not os.path.exists(path), name
        else:
            assert _read(path) == original, name
        assert _listing(path) == before, name  # no record left beside it
        hooks_json = agents.AGENTS["codex"].config_path()
        if os.path.exists(hooks_json):
            os.unlink(hooks_json)
        if original is not None:
            os.unlink(path)


@pytest.mark.parametrize("original", [b"", b"\n", b"  \n\n"])
def test_codex_blank_config_toml_survives_each_install_alone(home, original):
    """An existing empty or newline-only config.toml was deleted by install then uninstall."""
    make_home(home, "codex")
    path = _write_at(_codex_toml(), original)
    _install("codex")
    assert tomllib.loads(_read(path).decode())["features"]["hooks"] is True
    a = _uninstall("codex")
    assert a.settings["outcome"] == "changed"
    assert _read(path) == original
    _register("codex")
    r = _register("codex", remove=True)
    assert not any("install had created it" in n for n in r.notes)
    assert _read(path) == original
    assert _listing(path) == ["config.toml"]  # hooks.json install created is gone, and no record is left


def test_codex_flags_and_tables_the_user_set_stay(home):
    """What the user set in config.toml is theirs, even where it is what we would set: their own
    `hooks = true` (or `codex_hooks`), an empty `[features]`, and a `[features]` or our key
    they made their own after install (the marker taken off) stay through every uninstall, and
    a config.toml install created that the user then wrote to stays with what they wrote."""
    make_home(home, "codex")
    path = _codex_toml()
    for original in (b"[features]\nhooks = true\n", b"[features]\ncodex_hooks = true\n", b"[features]\n\n", b"\n"):
        _write_at(path, original)
        for step in ("install hooks", "install mcp", "uninstall hooks", "uninstall mcp"):
            verb, which = step.split()
            (CODEX_INSTALLS if verb == "install" else CODEX_UNINSTALLS)[which]()
        assert _read(path) == original, original
        os.unlink(path)
    # install created the file; the user took our marker off the key: the key and file are theirs
    _install("codex")
    _write_at(path, _read(path).replace(b"hooks = true  # added by attemptdb", b"hooks = true"))
    _register("codex")
    _register("codex", remove=True)
    _uninstall("codex")
    assert tomllib.loads(_read(path).decode()) == {"features": {"hooks": True}}
    os.unlink(path)
    # install created the file, the user took our key out and left our header: a reinstall fills
    # it again, and the file still goes with uninstall
    _install("codex")
    _write_at(path, _read(path).replace(b"hooks = true  # added by attemptdb\n", b""))
    _install("codex")
    _uninstall("codex")
    assert not os.path.exists(path) and _listing(path) == []
    # install created the file, the user wrote a setting into it: it stays, with that setting
    _register("codex")
    _write_at(path, b'model = "o3"\n' + _read(path))
    _install("codex")
    _uninstall("codex")
    _register("codex", remove=True)
    assert _read(path) == b'model = "o3"\n'


# --- whitespace inside an empty container the user had -------------------------------------------

def _ws_hooks_originals(provider):
    """The agent's hooks config with empty containers of the user's written with whitespace
    inside: the document, `hooks`, event arrays we subscribe (Gemini: `mcpServers` too)."""
    events = agents.AGENTS[provider].events
    version = '"version": 1, ' if provider == "cursor" else ""
    arrays = ",\n".join(f'    "{ev}": [\n    ]' for ev in events)
    out = {
        "document-newline": "{\n}\n",
        "document-space": "{ }",
        "document-crlf-tab": "{\r\n\t\r\n}\r\n",
        "hooks-newline": "{\n  " + version + '"model": "x",\n  "hooks": {\n  }\n}\n',
        "hooks-crlf-no-final": "{\r\n\t" + version + '"hooks": {\r\n\t}\r\n}',
        "event-space": "{" + version + '"hooks": {"' + events[0] + '": [ ]}}\n',
        "every-event-newline": "{\n  " + version + '"hooks": {\n' + arrays + "\n  }\n}\n",
        "mixed": "{" + version + '"hooks": {\n}, "mcpServers": {\n  }, "x": [ ], "y": {\t}}',
    }
    return {k: v.encode() for k, v in out.items()}


WS_MCP_ORIGINALS = [b"{\n}\n", b'{"numStartups": 3, "mcpServers": {\n  }}\n',
                    b'{\r\n  "mcpServers": { }\r\n}\r\n', b'{"mcpServers": {\n\n}, "projects": {\n}}']


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: "-".join(w[0] + w[1][0] for w in o))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_whitespace_in_an_empty_container_the_user_had_comes_back(home, provider, order):
    """A user's own empty object or array written with whitespace inside (`"hooks": {\\n}`,
    `"PreToolUse": [ ]`, `{"mcpServers": {\\n  }}`, the document `{\\n}`) came back as `{}` /
    `[]` once install had put something into it: removing the last child always leaves the
    brackets alone. The record keeps that whitespace and uninstall writes it back, for the
    hooks' config and the MCP server's of every agent, in every order of the two installs and
    uninstalls (Gemini CLI: one settings.json holds both; Codex: MCP goes to config.toml)."""
    make_home(home, provider)
    hooks_path = agents.AGENTS[provider].config_path()
    mcp_path = _mcp_path(provider)
    installs = {"hooks": lambda: _install(provider), "mcp": lambda: _register(provider)}
    uninstalls = {"hooks": lambda: _uninstall(provider), "mcp": lambda: _register(provider, remove=True)}
    for i, (name, original) in enumerate(_ws_hooks_originals(provider).items()):
        files = {hooks_path: original}
        if mcp_path != hooks_path and provider != "codex":
            files[mcp_path] = WS_MCP_ORIGINALS[i % len(WS_MCP_ORIGINALS)]
        for path, data in files.items():
            _write_at(path, data)
        before = {path: _listing(path) for path in files}
        for step, which in order:
            (installs if step == "install" else uninstalls)[which]()
            if step == "install" and which == "hooks":
                assert _ours(provider, hooks_path)[0], name
        for path, data in files.items():
            assert _read(path) == data, (name, path)
            assert _listing(path) == before[path], (name, path)  # no record left beside it
        for path in list(files) + ([_codex_toml()] if provider == "codex" else []):
            if os.path.exists(path):
                os.unlink(path)


def test_whitespace_comes_back_across_a_reinstall_and_only_where_it_was(home):
    """An update (moved executable) empties the user's array and fills it again: the whitespace
    the first install found is what uninstall writes back; an empty container install filled
    that the user fills too keeps what they put in; the record holds only whitespace."""
    make_home(home, "claude_code")
    original = b'{\n  "hooks": {\n    "PreToolUse": [ ],\n    "Stop": [\n    ]\n  }\n}\n'
    path = _write("claude_code", original)
    _install("claude_code")
    rec = json.loads(open(path + ".attemptdb.created", "rb").read())
    assert rec["filled"] == [{"path": ["hooks", "PreToolUse"], "inner": " "},
                             {"path": ["hooks", "Stop"], "inner": "\n    "}]
    moved = type(EXE)(["/opt/attemptdb2/bin/attempt"], "test")
    assert _install("claude_code", moved).outcome == merge.UPDATED
    _uninstall("claude_code")
    assert _read(path) == original
    # the user adds a hook of their own to an array install filled: it is theirs, and stays
    _install("claude_code")
    doc = json.loads(_read(path))
    doc["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "say done"}]})
    _write("claude_code", json.dumps(doc, indent=2).encode())
    _uninstall("claude_code")
    assert json.loads(_read(path))["hooks"] == {"PreToolUse": [], "Stop": [
        {"hooks": [{"type": "command", "command": "say done"}]}]}
    assert b'"PreToolUse": [ ]' in _read(path)


@pytest.mark.parametrize("inner", ["x", "", " // c ", 5])
def test_a_record_whose_filled_entry_is_not_whitespace_is_no_record(home, inner):
    """A `filled` entry that would write anything but whitespace into the user's file makes
    the record untrusted (as every malformed record is)."""
    from attemptdb.installer import record
    make_home(home, "claude_code")
    path = _write("claude_code", b'{"hooks": {\n}}')
    _install("claude_code")
    rec_path = path + ".attemptdb.created"
    rec = json.loads(open(rec_path, "rb").read())
    assert record.load(path) is not None and rec["filled"] == [{"path": ["hooks"], "inner": "\n"}]
    rec["filled"][0]["inner"] = inner
    with open(rec_path, "w") as f:
        json.dump(rec, f)
    assert record.load(path) is None
