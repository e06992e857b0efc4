"""The ``semantic`` extra's model with its int8 weights used as int8 (rewritten in memory before
onnxruntime loads it; the file itself is never changed).

The ONNX file keeps each weight matrix as int8 with a float scale per column, turned back into
float32 by the graph itself (``Mul(Cast(weight), scale)``). onnxruntime folds those into float32
constants when it loads the file: four times the memory (the model took about 165 MiB), and every
query streams 45 MB of float32 weights through the cache. Here the graph is rewritten so that
each ``MatMul`` by such a weight is a ``MatMulNBits`` (onnxruntime's contrib operator) with 8-bit
weights, the same int8 values and scales in blocks of 128 rows, computing in int8
(``accuracy_level`` 4: the activations are quantized per block of 128 of each row, so an outlier
in one row or block costs the others no precision), and each ``Gather`` from such a table (the
word and position embeddings) picks the int8 rows first and scales only those. The embeddings
differ from the float32 ones by about 1e-3 (cosine 0.9994 on average over GitHub's tools); the
model takes about 40 MiB, and a query's run about two thirds of the time
(``bench/RESULTS.rst``, tool search part 6). Two detours of the export are taken out on the way,
the arithmetic unchanged (:func:`_tidied`: part 13).
"""

from __future__ import annotations

import contextlib
import ctypes
from pathlib import Path
from typing import Any

#: The rows of a weight block (one scale and zero point each; the activations are quantized per block).
BLOCK = 128


def rewritten(path: Path) -> bytes:
    """The model at ``path``, its int8 weights used as int8, serialized for onnxruntime."""
    import numpy
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    constants = {each.name: each for each in graph.initializer}
    made_by = {output: node for node in graph.node for output in node.output}

    def dequantized(name: str) -> tuple[str, str] | None:
        """``(weight, scale)`` when ``name`` is ``Mul(Cast(int8 weight), scale)`` of constants."""
        mul = made_by.get(name)
        cast = made_by.get(mul.input[0]) if mul is not None and mul.op_type == "Mul" else None
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in constants or mul is None:
            return None
        weight = constants[cast.input[0]]
        if weight.data_type != TensorProto.INT8 or mul.input[1] not in constants:
            return None
        return cast.input[0], mul.input[1]

    nodes: list[Any] = []
    added: list[Any] = []
    for n, node in enumerate(graph.node):
        found = dequantized(node.input[0]) if node.op_type == "Gather" else None
        if found is not None:  # the int8 rows asked for, scaled: never the whole table in float32
            weight, scale = found
            ids, rows, floats, scales = node.input[1], f"int8.{n}.rows", f"int8.{n}.floats", f"int8.{n}.scales"
            nodes += [helper.make_node("Gather", [weight, ids], [rows]),
                      helper.make_node("Cast", [rows], [floats], to=TensorProto.FLOAT),
                      helper.make_node("Gather", [scale, ids], [scales]),
                      helper.make_node("Mul", [floats, scales], [node.output[0]])]
            continue
        found = dequantized(node.input[1]) if node.op_type == "MatMul" else None
        if found is not None:
            weight, scale = found
            values = numpy_helper.to_array(constants[weight])
            scaled = numpy_helper.to_array(constants[scale]).reshape(-1)
            if values.ndim == 2 and values.shape[0] % BLOCK == 0 and scaled.shape == (values.shape[1],):
                k, columns = values.shape
                blocks = k // BLOCK
                # MatMulNBits' layout: per column, its blocks of 8-bit values (unsigned, zero point 128)
                packed = (values.astype(numpy.int16) + 128).astype(numpy.uint8).T.reshape(columns, blocks, BLOCK)
                names = (f"int8.{n}.weight", f"int8.{n}.scales", f"int8.{n}.zero")
                added += [numpy_helper.from_array(packed, names[0]),
                          numpy_helper.from_array(numpy.repeat(scaled, blocks).astype(numpy.float32), names[1]),
                          numpy_helper.from_array(numpy.full(columns * blocks, 128, numpy.uint8), names[2])]
                nodes.append(helper.make_node("MatMulNBits", [node.input[0], *names], [node.output[0]],
                                              domain="com.microsoft", K=k, N=columns, bits=8,
                                              block_size=BLOCK, accuracy_level=4))
                continue
        nodes.append(node)
    nodes = _tidied(nodes, {**constants, **{each.name: each for each in added}})
    wanted = {output.name for output in graph.output}
    while True:  # the casts and products no node reads any more go, and then their constants
        read = {name for node in nodes for name in node.input} | wanted
        kept = [node for node in nodes if any(output in read for output in node.output)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    graph.ClearField("node")
    graph.node.extend(nodes)
    used = [each for each in [*graph.initializer, *added] if each.name in read]
    graph.ClearField("initializer")
    graph.initializer.extend(used)
    if not any(each.domain == "com.microsoft" for each in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    serialized: bytes = model.SerializeToString()
    return serialized


def _tidied(nodes: list[Any], constants: dict[str, Any]) -> list[Any]:
    """``nodes`` with two detours of this export taken out, each layer's arithmetic unchanged (the
    same products and sums in the same order: the embeddings are the same to the bit, tested): the
    keys' ``Transpose``, ``Reshape``, ``Transpose``, ``Reshape`` (by shapes worked out at each run
    by a ``Shape``, three ``Slice`` and two ``Concat``) that only lays them out for the product
    with the queries is one ``Transpose``; and ``Where(IsNaN(p), 0, p)`` after each softmax (which
    is NaN only where a whole row is masked, which no text is) is ``p``. A run has about a quarter
    fewer nodes to go through, each of which costs a few microseconds whatever the text's length."""
    from onnx import helper, numpy_helper

    made_by = {output: node for node in nodes for output in node.output}

    def made(name: str, op: str, perm: list[int] | None = None) -> Any:
        node = made_by.get(name)
        if node is None or node.op_type != op:
            return None
        if perm is not None and [list(each.ints) for each in node.attribute if each.name == "perm"] != [perm]:
            return None
        return node

    same: dict[str, str] = {}  # an output -> the name to read instead
    kept: list[Any] = []
    for node in nodes:
        if node.op_type == "Where" and made(node.input[0], "IsNaN") is not None \
                and made_by[node.input[0]].input[0] == node.input[2] and node.input[1] in constants \
                and not numpy_helper.to_array(constants[node.input[1]]).any():
            same[node.output[0]] = node.input[2]
            continue
        flipped = made(node.input[0], "Transpose", [0, 2, 1]) if node.op_type == "Reshape" else None
        heads = made(flipped.input[0], "Reshape") if flipped is not None else None
        split = made(heads.input[0], "Transpose", [0, 2, 1, 3]) if heads is not None else None
        if split is not None:  # (batch, length, heads, size) to (batch, heads, size, length) at once
            node = helper.make_node("Transpose", [split.input[0]], [node.output[0]], perm=[0, 2, 3, 1])
        kept.append(node)
    for node in kept:
        for at, name in enumerate(node.input):
            node.input[at] = same.get(name, name)
    return kept


def give_back() -> None:
    """Return the memory the rewrite had used to the system (glibc keeps freed memory for the
    process otherwise: about 30 MiB here); nothing where the C library has no ``malloc_trim``."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)
