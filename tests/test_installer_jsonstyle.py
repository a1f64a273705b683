"""jsonstyle: strict parsing with positions, style detection, and splices that are exact
inverses (insert then remove gives back the original bytes)."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attemptdb.installer import jsonstyle as js

# --- parsing ----------------------------------------------------------------------------------

def test_parse_positions_and_values():
    text = '{\n  "a": [1, 2.5, -3e2],\n  "b": {"c": "d\\u00e9", "e": null, "f": true}\n}\n'
    root = js.parse(text)
    assert root.to_python() == json.loads(text)
    a = root.get("a")
    assert text[a.start:a.key_end] == '"a"'
    assert text[a.value.start:a.value.end] == "[1, 2.5, -3e2]"
    assert [text[n.start:n.end] for n in a.value.items] == ["1", "2.5", "-3e2"]
    assert root.get("missing") is None


@pytest.mark.parametrize("text,code", [
    ('{"a": 1,}', "installer.config_invalid_json"),
    ('{"a": 1', "installer.config_invalid_json"),
    ("[1 2]", "installer.config_invalid_json"),
    ('{"a": 01}', "installer.config_invalid_json"),
    ('{"a": NaN}', "installer.config_invalid_json"),
    ("{'a': 1}", "installer.config_invalid_json"),
    ('{"a": "x\ny"}', "installer.config_invalid_json"),
    ('{"a": 1} {}', "installer.config_invalid_json"),
    ('{"a": 1, "a": 2}', "installer.config_duplicate_key"),
    ('{"a": {"b": 1, "b": 1}}', "installer.config_duplicate_key"),
    ('// c\n{"a": 1}', "installer.config_invalid_json"),
    ("", "installer.config_invalid_json"),
])
def test_parse_refuses_with_code_and_position(text, code):
    with pytest.raises(js.JSONStyleError) as e:
        js.parse(text)
    assert e.value.code == code
    assert e.value.exit_status == 1
    assert "line" in e.value.message


def test_errors_never_echo_content():
    secret = "sk-ant-SECRET-canary-123"
    for text in (f'{{"k": "{secret}"', f'{{"{secret}": 1, "{secret}": 2}}', f'{{"k": {secret}}}'):
        with pytest.raises(js.JSONStyleError) as e:
            js.parse(text)
        assert secret not in str(e.value)


def test_comments_only_when_allowed():
    text = '// top\n{\n  /* block */ "a": 1, // trailing\n  "b": [2 /* x */]\n}\n'
    with pytest.raises(js.JSONStyleError):
        js.parse(text)
    root = js.parse(text, allow_comments=True)
    assert root.to_python() == {"a": 1, "b": [2]}
    with pytest.raises(js.JSONStyleError):
        js.parse('{"a": 1 /* open', allow_comments=True)


def test_deep_nesting_is_refused_not_a_crash():
    with pytest.raises(js.JSONStyleError):
        js.parse("[" * 5000 + "]" * 5000)


def _where(text, pos):
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


@pytest.mark.parametrize("text,marker,code", [
    ('{"x": {"y": [1, {"b": 1,\n "b": 2}]}}', '"b": 2', "installer.config_duplicate_key"),
    ('{"x": [1, [2, NaN]]}', "NaN", "installer.config_invalid_json"),
    ('{"x": {"y": -Infinity}}', "-Infinity", "installer.config_invalid_json"),
    ('{"x": [[1,\n 2,]]}', "]]", "installer.config_invalid_json"),
    ('{"x": {"y": "a\tb"}}', "\t", "installer.config_invalid_json"),
])
def test_errors_deep_inside_a_large_value_name_their_place(text, marker, code):
    """Values below the top level are checked by the C scanner first; an error there is still
    found by `parse` and worded, with its line and column, by the positional parser."""
    with pytest.raises(js.JSONStyleError) as e:
        js.parse(text)
    assert e.value.code == code
    line, col = _where(text, text.index(marker))
    assert (e.value.line, e.value.col) == (line, col)


def test_nesting_limit_is_the_same_at_every_depth():
    assert js.parse("[" * 256 + "1" + "]" * 256).to_python() is not None
    assert js.parse('{"a": ' + "[" * 255 + "1" + "]" * 255 + "}").get("a") is not None
    assert js.parse("[" * 257 + "]" * 257).kind == "array"
    for text in ("[" * 257 + "1" + "]" * 257, '{"a": ' + "[" * 256 + "1" + "]" * 256 + "}",
                 "[" * 258 + "]" * 258):
        with pytest.raises(js.JSONStyleError) as e:
            js.parse(text)
        assert "deeper than 256" in e.value.message


def test_comments_deep_inside_are_parsed_when_allowed():
    text = '{"a": {"b": [1, /* c */ 2], // d\n "e": {"f": null}}}'
    root = js.parse(text, allow_comments=True)
    assert root.to_python() == {"a": {"b": [1, 2], "e": {"f": None}}}
    b = root.get("a").value.get("b").value
    assert [text[n.start:n.end] for n in b.items] == ["1", "2"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30)


def _walk(node, text):
    """Every node's span holds its own value; every member's key span holds its key."""
    assert json.loads(text[node.start:node.end]) == node.to_python()
    if node.kind == "object":
        for m in node.members:
            assert json.loads(text[m.start:m.key_end]) == m.key
            _walk(m.value, text)
    elif node.kind == "array":
        for n in node.items:
            _walk(n, text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=5), _JSON, max_size=5), st.sampled_from([None, 0, 1, 2, 4, "\t"]))
def test_every_span_holds_its_value_at_every_depth(doc, indent):
    text = json.dumps(doc, indent=indent)
    root = js.parse(text)
    assert root.to_python() == doc
    _walk(root, text)


def test_decode_refuses_non_utf8():
    with pytest.raises(js.JSONStyleError) as e:
        js.decode(b'{"a": "\xff"}')
    assert e.value.code == "installer.config_not_utf8"


def test_bom_is_kept():
    text = js.BOM + '{"a": []}'
    root = js.parse(text)
    out = js.insert_item(text, root.get("a").value, None, 1, js.detect_style(text, root))
    assert out.startswith(js.BOM) and json.loads(out[1:]) == {"a": [1]}


# --- style ------------------------------------------------------------------------------------

@pytest.mark.parametrize("indent,unit", [(2, "  "), (4, "    "), ("\t", "\t"), (3, "   ")])
def test_detect_indent(indent, unit):
    text = json.dumps({"a": {"b": [1]}}, indent=indent)
    assert js.detect_style(text).indent == unit


def test_detect_newline_final_newline_and_compact():
    s = js.detect_style('{\r\n  "a": 1\r\n}\r\n')
    assert s.newline == "\r\n" and s.final_newline
    s = js.detect_style('{\n  "a": 1\n}')
    assert s.newline == "\n" and not s.final_newline and not s.compact
    s = js.detect_style('{"a":1}')
    assert s.compact


def test_render_document_matches_json_dumps():
    v = {"a": [1, {"b": "é"}], "c": {}, "d": []}
    assert js.render_document(v, js.Style(indent="    ")) == json.dumps(v, indent=4, ensure_ascii=False) + "\n"


# --- splices ----------------------------------------------------------------------------------

def _style_text(value, indent, crlf, final_nl):
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    if crlf:
        text = text.replace("\n", "\r\n")
    if final_nl:
        text += "\r\n" if crlf else "\n"
    return text


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                      st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8))
json_value = st.recursive(
    json_leaf,
    lambda kids: st.one_of(st.lists(kids, max_size=4),
                           st.dictionaries(st.text(max_size=6), kids, max_size=4)),
    max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(json_value, max_size=5), new=json_value, where=st.integers(0, 6),
       indent=st.sampled_from([2, 4, "\t", None]), crlf=st.booleans(), final_nl=st.booleans())
def test_insert_then_remove_item_is_identity(items, new, where, indent, crlf, final_nl):
    doc = {"k": items, "z": 1}
    text = _style_text(doc, indent, crlf and indent is not None, final_nl)
    root = js.parse(text)
    style = js.detect_style(text, root)
    idx = min(where, len(items))
    out = js.insert_item(text, root.get("k").value, idx, new, style)
    after = js.parse(out)
    assert after.to_python()["k"] == items[:idx] + [new] + items[idx:]
    assert after.to_python()["z"] == 1
    back = js.remove_child(out, after.get("k").value, idx)
    if items:
        assert back == text
    else:  # an emptied array is written []
        assert js.parse(back).to_python() == doc


@settings(max_examples=100, deadline=None)
@given(members=st.dictionaries(st.text(max_size=5), json_value, max_size=4), value=json_value,
       indent=st.sampled_from([2, 4, "\t"]), crlf=st.booleans())
def test_append_then_remove_member_is_identity(members, value, indent, crlf):
    key = "__new__"
    doc = {"outer": members}
    text = _style_text(doc, indent, crlf, True)
    root = js.parse(text)
    style = js.detect_style(text, root)
    out = js.insert_member(text, root.get("outer").value, None, key, value, style)
    after = js.parse(out)
    assert list(after.to_python()["outer"]) == list(members) + [key]
    assert after.to_python()["outer"][key] == value
    back = js.remove_member(out, after.get("outer").value, key)
    if members:
        assert back == text
    if crlf:  # every new line break is a CRLF too
        assert "\n" not in out.replace("\r\n", "")


def test_insert_uses_the_line_indentation_of_neighbours():
    text = '{\n    "a": [\n        1\n    ]\n}\n'
    root = js.parse(text)
    out = js.insert_item(text, root.get("a").value, None, {"x": [2]}, js.detect_style(text, root))
    assert out == '{\n    "a": [\n        1,\n        {\n            "x": [\n                2\n            ]\n        }\n    ]\n}\n'


def test_inline_arrays_stay_inline_and_minified_stays_minified():
    text = '{\n  "a": [1, 2]\n}\n'
    root = js.parse(text)
    out = js.insert_item(text, root.get("a").value, 1, {"b": 1}, js.detect_style(text, root))
    assert out == '{\n  "a": [1, {"b": 1}, 2]\n}\n'
    text = '{"a":[1],"b":{}}'
    root = js.parse(text)
    out = js.insert_member(text, root.get("b").value, None, "c", [1, 2], js.detect_style(text, root))
    assert out == '{"a":[1],"b":{"c":[1,2]}}'


def test_untouched_bytes_survive_unusual_formatting():
    text = '{ "e" : "caf\\u00e9" ,"n":1.0E+2,\n\t"a" :[ ] }'
    root = js.parse(text)
    out = js.insert_item(text, root.get("a").value, None, 7, js.detect_style(text, root))
    assert out.startswith('{ "e" : "caf\\u00e9" ,"n":1.0E+2,\n\t"a" :[')
    assert json.loads(out)["a"] == [7]


@pytest.mark.parametrize("text,expected", [
    ('{"a": [\n    "ours",\n    // keep me\n    "user"\n]}', '{"a": [\n    // keep me\n    "user"\n]}'),
    ('{"a": [\n    "user",\n    // keep me\n    "ours"\n]}', '{"a": [\n    "user"\n    // keep me\n]}'),
    ('{"a": [\n    "user",\n    // keep me\n    "ours",\n    "next"\n]}',
     '{"a": [\n    "user",\n    // keep me\n    "next"\n]}'),
    ('{"a": ["ours", /* c */ "user"]}', '{"a": [ /* c */ "user"]}'),
])
def test_removing_our_entry_keeps_the_users_comments(text, expected):
    """JSONC (Gemini settings): a comment next to our entry is the user's and stays."""
    doc = js.parse(text, allow_comments=True)
    arr = doc.members[0].value
    idx = next(i for i, n in enumerate(arr.items) if text[n.start:n.end] == '"ours"')
    out = js.remove_child(text, arr, idx)
    assert out == expected
    js.parse(out, allow_comments=True)


@pytest.mark.parametrize("text, path", [
    ('{\n  // my settings\n}\n', ()),
    ('{\n  "hooks": { // TODO\n  }\n}\n', ("hooks",)),
    ('{\n  "hooks": {\n    "SessionStart": [ // keep\n    ]\n  }\n}\n', ("hooks", "SessionStart")),
    ('{\r\n\t/* a block */\r\n}\r\n', ()),
])
def test_a_comment_in_an_empty_container_stays_through_insert_and_remove(text, path):
    def node_at(doc):
        node = js.parse(doc, allow_comments=True)
        for key in path:
            node = node.get(key).value
        return node
    style = js.detect_style(text, js.parse(text, allow_comments=True))
    node = node_at(text)
    if node.kind == "array":
        out = js.insert_item(text, node, None, {"type": "command"}, style)
    else:
        out = js.insert_member(text, node, None, "added", [1], style)
    comment = text[text.index("/"):].split("\n")[0].rstrip("\r")
    assert comment in out and len(js.parse(out, allow_comments=True).to_python()) >= 1
    assert js.remove_child(out, node_at(out), 0) == text  # insert then remove: the file as it was


@pytest.mark.parametrize("text", [
    '[\n  {"a": 1} // guard\n]\n',
    '[\n  {"a": 1}, // first\n  {"b": 2} /* last */\n]\n',
    '[\r\n\t{"a": 1} // guard\r\n]\r\n',
])
def test_a_comment_after_the_last_item_stays_on_its_line_when_we_append(text):
    """JSONC (Gemini settings): `{…} // guard` on the last item's line is the user's note on that
    item; appending ours moved it onto our entry's closing line."""
    style = js.detect_style(text, js.parse(text, allow_comments=True))
    arr = js.parse(text, allow_comments=True)
    out = js.insert_item(text, arr, None, {"type": "command"}, style)
    last_user_line = next(ln for ln in text.splitlines() if "/" in ln and "{" in ln and ln.rstrip().endswith(("guard", "*/")))
    item = last_user_line.split("}")[0] + "}"
    note = last_user_line[last_user_line.index("}") + 1:].strip()
    assert any(ln.startswith(item) and ln.rstrip().endswith(note) for ln in out.splitlines()), out
    assert js.parse(out, allow_comments=True).to_python()[-1] == {"type": "command"}
    new = js.parse(out, allow_comments=True)
    assert js.remove_child(out, new, len(new.to_python()) - 1) == text  # and back, byte for byte
