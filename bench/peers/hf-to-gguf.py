#!/usr/bin/python3
"""Convert a synthetic Kimi Linear checkpoint to GGUF with Debian's llama.cpp converter.

Runs inside the sid chroot (python3-gguf, llama.cpp-tools, python3-torch). Debian's
convert_hf_to_gguf.py does the tensors; only the vocabulary is ours: burrow-cli synth writes
no tokenizer, so the GGUF gets a byte-level one matching bench/peers/write-tokenizer.py (id =
byte value for ids 0-255, the rest unused), so that the same ASCII prompt is the same ids in
Burrow (--ids), rabbit (tiktoken.model) and llama.cpp.

usage: hf-to-gguf.py DIR OUT.gguf          (BF16 stays BF16: --outtype bf16)
"""
import os
import runpy
import sys
import types

CONVERTER = "/usr/share/doc/llama.cpp-tools/scripts/convert_hf_to_gguf.py"
TOOLS = "/usr/share/llama.cpp/llama.cpp-tools"


def stub_transformers():
    """The converter imports transformers only for AutoConfig/AutoTokenizer; it falls back to
    config.json when AutoConfig fails, and our vocabulary needs no tokenizer."""
    mod = types.ModuleType("transformers")

    class _Auto:
        @staticmethod
        def from_pretrained(*args, **kwargs):
            raise OSError("transformers is not installed (bench/peers stub)")

    mod.AutoConfig = _Auto
    mod.AutoTokenizer = _Auto
    sys.modules["transformers"] = mod


def byte_to_unicode(b):
    """GPT-2's printable stand-in for byte B, the form a "gpt2" GGUF vocabulary stores."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    if b in printable:
        return chr(b)
    return chr(256 + sum(1 for x in range(b) if x not in printable))


def byte_vocab(self):
    import gguf

    size = self.hparams["vocab_size"]
    tokens, types_ = [], []
    for i in range(size):
        if i < 256:
            tokens.append(byte_to_unicode(i))
            types_.append(gguf.TokenType.NORMAL)
        elif i == 256:  # llama.cpp wants at least one merge: two spaces, never in our prompts
            tokens.append(byte_to_unicode(32) * 2)
            types_.append(gguf.TokenType.NORMAL)
        else:
            tokens.append(f"[PAD{i}]")
            types_.append(gguf.TokenType.UNUSED)
    w = self.gguf_writer
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types_)
    w.add_token_merges([byte_to_unicode(32) + " " + byte_to_unicode(32)])
    w.add_bos_token_id(self.hparams.get("bos_token_id", 1))
    w.add_eos_token_id(self.hparams.get("eos_token_id", size - 1))
    w.add_add_bos_token(False)


def main():
    if len(sys.argv) != 3 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: hf-to-gguf.py DIR OUT.gguf")
    stub_transformers()
    sys.path.insert(1, TOOLS)
    from conversion import kimi_linear
    kimi_linear.KimiLinearModel.set_vocab = byte_vocab
    sys.argv = [CONVERTER, sys.argv[1], "--outfile", sys.argv[2], "--outtype", "bf16"]
    runpy.run_path(CONVERTER, run_name="__main__")


if __name__ == "__main__":
    main()
