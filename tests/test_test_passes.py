"""scripts/test.sh runs the tests that need no model two at a time, then the model's, browser's
and workers' tests one at a time; tests/conftest.py keeps a model test from the first pass."""

from __future__ import annotations

import pytest


def test_a_test_not_marked_model_cannot_load_the_model():
    import llama_cpp

    with pytest.raises(pytest.fail.Exception, match="loads the embedded model: mark it @pytest.mark.model"):
        llama_cpp.Llama(model_path="any.gguf")


def test_a_test_asking_for_the_model_file_is_marked_model(request, model_path):
    assert request.node.get_closest_marker("model") is not None
