#!/usr/bin/python3
"""Write a byte-level tiktoken tokenizer beside a synthetic Kimi checkpoint.

burrow-cli synth writes no tokenizer; rabbit needs `tiktoken.model` and
`tokenizer_config.json` to take a text prompt. Every byte is its own token
(rank = byte value) and the 256 reserved specials follow, so an ASCII prompt
of n characters is n tokens whose ids are the characters' codes, and Burrow
can be given the same ids with --ids.

usage: write-tokenizer.py DIR
"""
import base64
import json
import os
import sys

SPECIALS = {256: "[BOS]", 257: "[EOS]", 258: "<|im_end|>", 259: "<|im_user|>",
            260: "<|im_assistant|>", 261: "<|im_system|>", 262: "<|im_middle|>",
            263: "<|open|>", 264: "<|close|>", 265: "<|sep|>", 266: "<|end_of_msg|>"}


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: write-tokenizer.py DIR (an existing checkpoint folder)")
    out = sys.argv[1]
    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    write_atomic(os.path.join(out, "tiktoken.model"), "\n".join(lines) + "\n")
    cfg = {"added_tokens_decoder": {str(i): {"content": s, "special": True}
                                    for i, s in SPECIALS.items()},
           "bos_token": "[BOS]", "eos_token": "[EOS]"}
    write_atomic(os.path.join(out, "tokenizer_config.json"), json.dumps(cfg, indent=1) + "\n")


if __name__ == "__main__":
    main()
