"""`attempt hook install` then `attempt hook uninstall` gives the user's config back as it was:
what install created (a `hooks` object, an event array, Cursor's `"version": 1`, the file itself)
goes, what the user had (even empty) stays, and what the user added meanwhile stays."""

import json
import os

import pytest
from test_installer import EXE, REAL, STYLES, make_home, styled

from attemptdb.installer import agents, fileops, install, merge

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
    stays, with what they wrote."""
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
    assert json.loads(_read(path)) == {"zz_user": True, "hooks": {"MyEvent": [{"command": "mine.sh"}]}}


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
