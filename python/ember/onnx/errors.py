"""The errors of the ONNX importer: all are ember.EmberError."""

from __future__ import annotations

import ember


class OnnxImportError(ember.EmberError):
    """A model ember cannot import (the base of the importer's errors)."""


class UnsupportedOnnxError(OnnxImportError):
    """The model uses ONNX operators, opsets or attribute values ember does not import."""


class InvalidOnnxError(OnnxImportError):
    """The file or bytes are not a readable ONNX model."""


class NodeUnsupported(Exception):
    """Raised by a converter for one node's attributes or inputs; the importer turns it into
    an UnsupportedOnnxError that names the model and the node."""


def unsupported(message: str) -> NodeUnsupported:
    return NodeUnsupported(message)
