"""Moved to :mod:`styleeval.backends.openai_server`; kept so that ``from styleeval.server import ServerError`` works."""

from styleeval.backends.openai_server import ServerClient, ServerError, api_key_from_env

__all__ = ["ServerClient", "ServerError", "api_key_from_env"]
