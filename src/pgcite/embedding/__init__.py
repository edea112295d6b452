"""Embedding models: the bundled one on ONNX Runtime and OpenAI-compatible servers, and the model's
tokenizer. May import only config and errors."""
