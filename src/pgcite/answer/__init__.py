"""Answering: the event stream (flow), its checks, and the generators (extractive, chat)."""
