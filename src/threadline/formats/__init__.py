"""Messages from and to the APIs agents use, as threadline (AI SDK ``UIMessage``) messages.

Pure functions over lists of messages, returning plain dicts. Lossless: converting a list in
and back out gives the same list (``to_openai_chat(from_openai_chat(m)) == m``); what has no
part of its own is kept under ``providerMetadata``. Converters never invent ``id`` or
``createdAt``.

>>> from threadline.formats import from_openai_chat, to_openai_chat
>>> chat = [{"role": "user", "content": "Weather in Oslo?"}]
>>> to_openai_chat(from_openai_chat(chat)) == chat
True
"""

from threadline.formats._anthropic import from_anthropic, to_anthropic
from threadline.formats._genai import from_genai, to_genai
from threadline.formats._openai_chat import (
    from_openai_chat,
    is_openai_chat_message,
    to_openai_chat,
)
from threadline.formats._openai_responses import from_openai_responses, to_openai_responses

__all__ = [
    "from_anthropic",
    "from_genai",
    "from_openai_chat",
    "from_openai_responses",
    "is_openai_chat_message",
    "to_anthropic",
    "to_genai",
    "to_openai_chat",
    "to_openai_responses",
]
