"""Drives ferroclaw's OpenAI-compatible API with the official `openai` package.

Usage: client.py <base_url> <token>. Prints one JSON object with what it saw.
"""
import json
import sys

from openai import OpenAI

base, token = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=0)
out = {}

reply = client.chat.completions.create(
    model="ferroclaw:main",
    messages=[{"role": "user", "content": "hello from python"}],
)
out["text"] = reply.choices[0].message.content
out["finish_reason"] = reply.choices[0].finish_reason
out["completion_tokens"] = reply.usage.completion_tokens

stream = client.chat.completions.create(
    model="agent:main",
    messages=[{"role": "user", "content": "@tokens 12"}],
    stream=True,
    user="py-user",
)
pieces = []
finish = None
for chunk in stream:
    choice = chunk.choices[0]
    if choice.delta.content:
        pieces.append(choice.delta.content)
    if choice.finish_reason:
        finish = choice.finish_reason
out["streamed"] = "".join(pieces)
out["stream_chunks"] = len(pieces)
out["stream_finish"] = finish
out["models"] = [m.id for m in client.models.list()]

try:
    OpenAI(base_url=f"{base}/v1", api_key="wrong", max_retries=0).chat.completions.create(
        model="ferroclaw:main", messages=[{"role": "user", "content": "x"}]
    )
    out["bad_token"] = "accepted"
except Exception as e:  # openai.AuthenticationError
    out["bad_token"] = type(e).__name__

print(json.dumps(out))
