#!/usr/bin/python3
"""Renders the chat-template test conversations with jinja2 templates written from
ARCHITECTURES.md (an implementation independent of engine/text/chat-template.c) and
writes tests/fixtures/text/chat-expected.json. Run with Debian's /usr/bin/python3."""
import json
import os

import jinja2

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "fixtures", "text", "chat-expected.json")

CONVERSATIONS = {
    "user-only": [
        {"role": "user", "content": "Hello!"},
    ],
    "system-user": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France?"},
    ],
    "multi-turn": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris.", "reasoning": "The user asks about France."},
        {"role": "user", "content": "And of Japan?"},
    ],
    "markup-and-quotes": [
        {"role": "user", "content": 'He said "a & b" <b>bold</b> \'q\' &amp; <|open|>'},
        {"role": "assistant", "content": 'Use "&&" in C', "reasoning": 'Quote: "&"'},
        {"role": "user", "content": "line one\nline two\n\n  indented\t\u4e2d\u6587 \U0001f600"},
    ],
    "empty-parts": [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": "", "reasoning": ""},
        {"role": "user", "content": " "},
    ],
    "ends-with-assistant": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4", "reasoning": "Simple arithmetic."},
    ],
}

VARIANTS = {
    "kimi_linear": [
        {"thinking": False, "add_generation_prompt": True},
        {"thinking": True, "add_generation_prompt": True},
        {"thinking": False, "add_generation_prompt": False},
    ],
    "kimi_k3": [
        {"thinking": True, "add_generation_prompt": True},
        {"thinking": False, "add_generation_prompt": True},
        {"thinking": True, "add_generation_prompt": False},
        {"thinking": True, "add_generation_prompt": True, "thinking_effort": "high"},
        {"thinking": True, "add_generation_prompt": True, "continuation": True},
    ],
    "glm": [
        {"thinking": True, "add_generation_prompt": True},
        {"thinking": False, "add_generation_prompt": True},
        {"thinking": False, "add_generation_prompt": False},
        {"thinking": True, "add_generation_prompt": True, "continuation": True},
    ],
}


def main():
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), autoescape=False,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    cases = []
    for fmt, variants in VARIANTS.items():
        template = env.get_template(fmt + ".jinja")
        for variant in variants:
            for name, messages in CONVERSATIONS.items():
                opts = {"thinking_effort": None, "continuation": False, **variant}
                prompt = template.render(messages=messages, **opts)
                cases.append({"format": fmt, "conversation": name, **opts,
                              "messages": messages, "prompt": prompt})
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"reference": "jinja2 " + jinja2.__version__ + ", tests/text/reference/*.jinja",
                   "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases -> {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
