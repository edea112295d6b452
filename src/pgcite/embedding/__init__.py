"""Embedding models: the bundled one on ONNX Runtime and OpenAI-compatible servers."""
