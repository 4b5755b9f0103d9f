"""A small byte-level BPE in Kimi's tiktoken format: training, encoding and the two files.

Pre-tokenisation uses Kimi's pattern (ARCHITECTURES.md 5.1) with the `regex` module (Debian
package python3-regex; VERSION1 mode provides the `&&` class intersection). Ranks 0..255 are the
single bytes in byte order; each merge adds the next rank. Encoding follows tiktoken: a piece that
is itself a token is emitted whole, otherwise adjacent parts are merged lowest rank first.
Special tokens are Kimi's 256 reserved ids placed right after the base vocabulary, named as in the
Kimi Linear release, the rest `<|reserved_token_{id}|>`.
"""
import base64
import json

import regex

PATTERN = "|".join([
    r"[\p{Han}]+",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"\s*[\r\n]+",
    r"\s+(?!\S)",
    r"\s+",
])
SPLITTER = regex.compile(PATTERN, regex.V1)

NUM_SPECIAL = 256
# Offsets from num_base_tokens of the named special tokens, as in Kimi Linear's release.
NAMED_SPECIALS = {
    0: "[BOS]", 1: "[EOS]", 2: "<|im_end|>", 3: "<|im_user|>", 4: "<|im_assistant|>",
    6: "<|start_header_id|>", 7: "<|end_header_id|>", 9: "[EOT]", 10: "<|im_system|>",
    11: "<|tool_calls_section_begin|>", 12: "<|tool_calls_section_end|>",
    13: "<|tool_call_begin|>", 14: "<|tool_call_argument_begin|>", 15: "<|tool_call_end|>",
    17: "<|im_middle|>", 18: "<|media_begin|>", 19: "<|media_content|>", 20: "<|media_end|>",
    21: "<|media_pad|>", 22: "<think>", 23: "</think>", 254: "[UNK]", 255: "[PAD]",
}


def pieces(text):
    return SPLITTER.findall(text)


def train(texts, n_base):
    """Learn n_base - 256 merges from an iterable of texts; returns the token byte strings in
    rank order (index = rank)."""
    counts = {}
    for text in texts:
        for p in pieces(text):
            counts[p] = counts.get(p, 0) + 1
    words = [list(p.encode("utf-8")) for p in counts]
    freqs = list(counts.values())
    tokens = [bytes([i]) for i in range(256)]
    index = {t: i for i, t in enumerate(tokens)}
    pair_count, pair_words = {}, {}

    def add_pairs(w, sign):
        syms, f = words[w], freqs[w]
        for a, b in zip(syms, syms[1:]):
            pair_count[(a, b)] = pair_count.get((a, b), 0) + sign * f
            if sign > 0:
                pair_words.setdefault((a, b), set()).add(w)

    for w in range(len(words)):
        add_pairs(w, 1)
    while len(tokens) < n_base:
        best = max(pair_count.items(), key=lambda kv: (kv[1], kv[0]))
        if best[1] <= 0:
            break
        a, b = best[0]
        merged = tokens[a] + tokens[b]
        if merged not in index:
            index[merged] = len(tokens)
            tokens.append(merged)
        new = index[merged]
        for w in sorted(pair_words.pop((a, b), ())):
            syms = words[w]
            add_pairs(w, -1)
            out, i = [], 0
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    out.append(new)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            words[w] = out
            add_pairs(w, 1)
        pair_count.pop((a, b), None)
    return tokens


class Tokenizer:
    def __init__(self, tokens):
        self.tokens = list(tokens)
        self.ranks = {t: i for i, t in enumerate(self.tokens)}
        self.n_base = len(self.tokens)
        self.special_names = [NAMED_SPECIALS.get(i, "<|reserved_token_%d|>" % (self.n_base + i))
                              for i in range(NUM_SPECIAL)]
        self.specials = {name: self.n_base + i for i, name in enumerate(self.special_names)}
        alts = sorted(self.specials, key=len, reverse=True)
        self.special_re = regex.compile("|".join(regex.escape(s) for s in alts))
        self.cache = {}

    @classmethod
    def load(cls, path):
        tokens = []
        for rank, line in enumerate(open(path, "rb").read().split(b"\n")):
            if not line.strip():
                continue
            b64, r = line.split()
            if int(r) != len(tokens):
                raise ValueError("ranks must be contiguous")
            tokens.append(base64.b64decode(b64))
        return cls(tokens)

    def vocab_size(self):
        return self.n_base + NUM_SPECIAL

    def _merge(self, piece):
        parts = [piece[i:i + 1] for i in range(len(piece))]
        while len(parts) > 1:
            best, at = None, -1
            for i in range(len(parts) - 1):
                r = self.ranks.get(parts[i] + parts[i + 1])
                if r is not None and (best is None or r < best):
                    best, at = r, i
            if best is None:
                break
            parts[at:at + 2] = [parts[at] + parts[at + 1]]
        return [self.ranks[p] for p in parts]

    def encode_ordinary(self, text):
        out = []
        for p in pieces(text):
            ids = self.cache.get(p)
            if ids is None:
                b = p.encode("utf-8")
                ids = [self.ranks[b]] if b in self.ranks else self._merge(b)
                self.cache[p] = ids
            out.extend(ids)
        return out

    def encode(self, text):
        """Special-token strings in text become their single ids."""
        out, pos = [], 0
        for m in self.special_re.finditer(text):
            out += self.encode_ordinary(text[pos:m.start()])
            out.append(self.specials[m.group()])
            pos = m.end()
        return out + self.encode_ordinary(text[pos:])

    def decode_bytes(self, ids):
        return b"".join(self.tokens[i] if i < self.n_base
                        else self.special_names[i - self.n_base].encode() for i in ids)

    def decode(self, ids):
        return self.decode_bytes(ids).decode("utf-8", "replace")

    def write(self, folder):
        with open(folder + "/tiktoken.model", "w") as f:
            for rank, t in enumerate(self.tokens):
                f.write("%s %d\n" % (base64.b64encode(t).decode(), rank))
        decoder = {}
        for i in range(NUM_SPECIAL):
            decoder[str(self.n_base + i)] = {
                "content": self.special_names[i], "lstrip": False, "normalized": False,
                "rstrip": False, "single_word": False, "special": True}
        cfg = {
            "added_tokens_decoder": decoder,
            "additional_special_tokens": ["<|im_end|>", "<|im_user|>", "<|im_assistant|>",
                                          "<|start_header_id|>", "<|end_header_id|>", "[EOT]",
                                          "<|im_system|>", "<|im_middle|>"],
            "bos_token": "[BOS]",
            "chat_template": CHAT_TEMPLATE,
            "clean_up_tokenization_spaces": False,
            "eos_token": "<|im_end|>",
            "extra_special_tokens": {},
            "model_max_length": 1048576,
            "pad_token": "[PAD]",
            "tokenizer_class": "TikTokenTokenizer",
            "unk_token": "[UNK]",
        }
        with open(folder + "/tokenizer_config.json", "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")


# Kimi Linear's text-only chat format (ARCHITECTURES.md 2.6), as a Jinja template.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}<|im_system|>system<|im_middle|>"
    "{%- elif message['role'] == 'user' -%}<|im_user|>user<|im_middle|>"
    "{%- else -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}"
    "{{ message['content'] }}<|im_end|>"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}"
)


def chat_prompt(user, system=None):
    """The prompt text of one user turn with the generation prompt appended."""
    text = ""
    if system:
        text += "<|im_system|>system<|im_middle|>" + system + "<|im_end|>"
    return text + "<|im_user|>user<|im_middle|>" + user + "<|im_end|>" \
        "<|im_assistant|>assistant<|im_middle|>"
