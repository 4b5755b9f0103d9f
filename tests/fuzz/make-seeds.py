#!/usr/bin/python3
"""Writes the fuzz seed corpus: tests/fixtures/fuzz/TARGET/ for the targets whose seeds
are made here (the session seeds come from the engine itself: see fuzz-session.c).

Files named ok-* must be accepted by the parser, bad-* rejected; the replay test checks
both. Real files from the fixtures are copied in. Run from anywhere:
python3 tests/fuzz/make-seeds.py
"""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "fuzz")
TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ORACLES = os.path.join(TESTS, "fixtures", "oracles")
RUN_FIXTURES = os.path.join(TESTS, "run", "fixtures")
DEMO = os.path.join(TESTS, "..", "data", "demo-model")


def read(*parts):
    with open(os.path.join(*parts), "rb") as f:
        return f.read()


def st_file(header, data_len, claimed=None, pad=False):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    n = len(text) if claimed is None else claimed
    return struct.pack("<Q", n) + text + bytes(i & 0xFF for i in range(data_len))


def tensor(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def safetensors_seeds():
    small = {
        "__metadata__": {"format": "pt"},
        "model.norm.weight": tensor("F32", [2, 2], 0, 16),
        "lm_head.weight": tensor("BF16", [3], 16, 22),
        "model.layers.1.block_sparse_moe.experts.0.w1.weight_packed": tensor("U8", [4, 2], 22, 30),
    }
    all_dtypes, off = {}, 0
    for name, size in [("F32", 4), ("F16", 2), ("BF16", 2), ("F64", 8), ("F8_E4M3", 1),
                       ("float8_e4m3fn", 1), ("U8", 1), ("I8", 1), ("I16", 2), ("I32", 4),
                       ("I64", 8), ("BOOL", 1)]:
        all_dtypes["t_" + name] = tensor(name, [2], off, off + 2 * size)
        off += 2 * size
    seeds = {
        "ok-small.safetensors": st_file(small, 30),
        "ok-padded.safetensors": st_file(small, 30, pad=True),
        "ok-all-dtypes.safetensors": st_file(all_dtypes, off),
        "ok-empty-tensors.safetensors": st_file({"a": tensor("F32", [0], 0, 0),
                                                 "b": tensor("F32", [], 0, 4),
                                                 "c": tensor("BF16", [2, 0, 3], 4, 4)}, 4),
        "ok-metadata-only.safetensors": st_file({"__metadata__": {"format": "pt"}}, 0),
        "bad-truncated-prefix.safetensors": b"\x40\x00\x00\x00\x00",
        "bad-truncated-header.safetensors": st_file(small, 30)[:60],
        "bad-oversized-header.safetensors": st_file(small, 30, claimed=1 << 40),
        "bad-header-past-end.safetensors": st_file(small, 30, claimed=4096),
        "bad-header-length-max.safetensors": st_file(small, 30, claimed=(1 << 64) - 1),
        "bad-overlapping-offsets.safetensors": st_file({"a": tensor("F32", [3], 0, 12),
                                                        "b": tensor("F32", [2], 8, 16)}, 16),
        "bad-wrong-dtype.safetensors": st_file({"a": tensor("Q4_K", [4], 0, 16)}, 16),
        "bad-dtype-not-string.safetensors": st_file({"a": tensor(7, [4], 0, 16)}, 16),
        "bad-size-mismatch.safetensors": st_file({"a": tensor("F32", [2, 2], 0, 12)}, 16),
        "bad-offsets-outside.safetensors": st_file({"a": tensor("F32", [8], 0, 32)}, 16),
        "bad-offsets-reversed.safetensors": st_file({"a": tensor("F32", [0], 16, 0)}, 16),
        "bad-negative-dim.safetensors": st_file({"a": tensor("F32", [-4], 0, 16)}, 16),
        "bad-too-many-dims.safetensors": st_file({"a": tensor("U8", [1] * 9, 0, 1)}, 1),
        "bad-element-overflow.safetensors": st_file({"a": tensor("U8", [1 << 32, 1 << 32],
                                                                 0, 16)}, 16),
        "bad-not-object.safetensors": st_file(b"[1, 2, 3]", 0),
        "bad-json.safetensors": st_file(b'{"a": {"dtype": "F32", "shape": [4', 16),
        "bad-invalid-utf8.safetensors": st_file(b'{"\xff\xfe": {}}', 0),
        "bad-deep-nesting.safetensors": st_file(b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}", 0),
        "bad-metadata-type.safetensors": st_file({"__metadata__": 5}, 0),
    }
    return seeds


def config_seeds():
    kimi = {
        "model_type": "kimi_linear", "hidden_size": 16, "num_hidden_layers": 3,
        "num_attention_heads": 2, "vocab_size": 64, "kv_lora_rank": 8, "q_lora_rank": None,
        "qk_nope_head_dim": 4, "qk_rope_head_dim": 2, "v_head_dim": 4, "num_experts": 4,
        "num_experts_per_token": 2, "num_shared_experts": 1, "first_k_dense_replace": 1,
        "moe_layer_freq": 1, "rms_norm_eps": 1e-5, "routed_scaling_factor": 2.446,
        "linear_attn_config": {"head_dim": 4, "num_heads": 2, "short_conv_kernel_size": 4,
                               "kda_layers": [1, 2], "full_attn_layers": [3]},
    }
    k3_text = dict(kimi, q_lora_rank=16, routed_expert_hidden_size=32, attn_res_block_size=2,
                   linear_attn_config=dict(kimi["linear_attn_config"], gate_lower_bound=-5.0,
                                           use_full_rank_gate=True))
    k3 = {"model_type": "kimi_k3", "vision_config": None, "text_config": k3_text}
    glm = {
        "model_type": "glm_moe_dsa", "hidden_size": 128, "num_hidden_layers": 5,
        "num_attention_heads": 8, "vocab_size": 256, "q_lora_rank": 64, "kv_lora_rank": 32,
        "qk_nope_head_dim": 24, "qk_rope_head_dim": 8, "v_head_dim": 8, "n_routed_experts": 8,
        "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 3,
        "n_group": 1, "topk_group": 1, "index_topk": 4096, "index_head_dim": 16,
        "index_n_heads": 16, "mlp_layer_types": ["dense"] * 3 + ["sparse"] * 2,
        "indexer_types": ["full", "full", "shared", "full", "shared"],
    }

    def with_(base, **changes):
        out = json.loads(json.dumps(base))
        out.update(changes)
        return out

    seeds = {
        "ok-kimi-linear.json": kimi,
        "ok-kimi-k3.json": k3,
        "ok-glm.json": glm,
        "ok-glm-no-layer-types.json": {k: v for k, v in glm.items() if k != "mlp_layer_types"},
        "bad-unknown-model-type.json": with_(kimi, model_type="llama"),
        "bad-no-model-type.json": {k: v for k, v in kimi.items() if k != "model_type"},
        "bad-k3-no-text-config.json": {"model_type": "kimi_k3"},
        "bad-hidden-size-zero.json": with_(kimi, hidden_size=0),
        "bad-hidden-size-string.json": with_(kimi, hidden_size="16"),
        "bad-layers-huge.json": with_(kimi, num_hidden_layers=1 << 40),
        "bad-top-k-above-experts.json": with_(kimi, num_experts_per_token=9),
        "bad-kda-layer-out-of-range.json": with_(kimi, linear_attn_config=dict(
            kimi["linear_attn_config"], kda_layers=[1, 2, 4])),
        "bad-layer-in-both-lists.json": with_(kimi, linear_attn_config=dict(
            kimi["linear_attn_config"], kda_layers=[1, 2, 3])),
        "bad-glm-mlp-types-short.json": with_(glm, mlp_layer_types=["dense"]),
        "bad-glm-groups-uneven.json": with_(glm, n_group=3),
        "bad-eps-negative.json": with_(kimi, rms_norm_eps=-1.0),
    }
    out = {name: json.dumps(value, indent=1).encode() for name, value in seeds.items()}
    out["bad-not-json.json"] = b'{"model_type": "kimi_linear",,}'
    out["bad-deep-nesting.json"] = b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}"
    out["bad-empty.json"] = b""
    return out


def index_seeds():
    out = {
        "ok-kimi-linear.json": read(ORACLES, "kimi_linear", "model.safetensors.index.json"),
        "ok-glm52.json": read(ORACLES, "glm52", "model.safetensors.index.json"),
        "ok-one-shard.json": json.dumps({"metadata": {"total_size": 8},
                                         "weight_map": {"a": "model.safetensors"}}).encode(),
        "bad-path-escape.json": b'{"weight_map": {"a": "../etc/passwd"}}',
        "bad-absolute.json": b'{"weight_map": {"a": "/etc/passwd"}}',
        "bad-dot-dot.json": b'{"weight_map": {"a": ".."}}',
        "bad-empty-map.json": b'{"weight_map": {}}',
        "bad-no-map.json": b'{"metadata": {}}',
        "bad-shard-not-string.json": b'{"weight_map": {"a": 3}}',
        "bad-repeated-key.json": b'{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}',
        "bad-deep-nesting.json": b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}",
        "bad-not-utf8.json": b'{"weight_map": {"\xff": "x.safetensors"}}',
        "bad-two-values.json": b'{"weight_map": {"a": "x.safetensors"}} [1]',
        "bad-scalar-then-array.json": b'"x" [1]',
    }
    return out


def tiktoken_seeds():
    return {
        "ok-kimi-linear-fixture.model": read(RUN_FIXTURES, "kimi_linear", "tiktoken.model"),
        "ok-kimi-k3-fixture.model": read(RUN_FIXTURES, "kimi_k3", "tiktoken.model"),
        "ok-demo.model": read(DEMO, "tiktoken.model"),
        "bad-rank-huge.model": b"YQ== 99999999999\n",
        "bad-empty.model": b"",
        "bad-no-space.model": b"YQ==1\n",
        # Ids far past the tokens before them made the id table huge (256 MiB for one line).
        "bad-rank-far-ahead.model": b"YQ== 0\nYg== 16777215\n",
    }


def tokenizer_json_seeds():
    small = json.loads(read(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                            "fuzz", "tokenizer-json", "ok-small.json"))
    small["model"]["vocab"]["far"] = 16000000
    return {"ok-glm52-fixture.json": read(RUN_FIXTURES, "glm52", "tokenizer.json"),
            "bad-id-far-ahead.json": json.dumps(small).encode()}


def tokenizer_config_seeds():
    kimi = {"added_tokens_decoder": {
        str(256 + i): {"content": name, "special": True}
        for i, name in enumerate(["[BOS]", "[EOS]", "<|im_end|>", "<|im_user|>"])}}
    return {
        "ok-kimi-layout.json": json.dumps(kimi, indent=1).encode(),
        "ok-sparse-ids.json": json.dumps({"added_tokens_decoder": {
            "300": {"content": "<|a|>"}, "1000": {"content": "<|b|>"}}}).encode(),
        "ok-no-decoder.json": json.dumps({"chat_template": "{{ messages }}",
                                          "model_max_length": 4096}).encode(),
        "fixture-kimi-linear.json": read(RUN_FIXTURES, "kimi_linear", "tokenizer_config.json"),
        "ok-o200k.json": read(TESTS, "fixtures", "text", "o200k_base", "tokenizer_config.json"),
        "ok-demo.json": read(DEMO, "tokenizer_config.json"),
        "bad-id-below-base.json": b'{"added_tokens_decoder": {"5": {"content": "x"}}}',
        "bad-id-not-number.json": b'{"added_tokens_decoder": {"x1": {"content": "x"}}}',
        "bad-empty-content.json": b'{"added_tokens_decoder": {"300": {"content": ""}}}',
        "bad-id-huge.json": b'{"added_tokens_decoder": {"99999999999": {"content": "x"}}}',
        "bad-not-json.json": b'{"added_tokens_decoder": {',
        # A Kimi-style block of specials from 256 to 16,000,000 named 16 million reserved ids.
        "bad-reserved-block-huge.json": b'{"added_tokens_decoder": {"256": {"content": "a"},'
                                        b' "16000000": {"content": "b"}}}',
    }


def serve_request_seeds():
    user = [{"role": "user", "content": "hello there"}]
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}]
    seeds = {
        "ok-minimal.json": {"model": "m", "messages": user},
        "ok-full.json": {"model": "m", "messages": [{"role": "system", "content": "be brief"},
                                                    {"role": "developer", "content": "x"}]
                         + user + [{"role": "assistant", "content": None}] + user,
                         "stream": True, "stream_options": {"include_usage": True},
                         "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
                         "repetition_penalty": 1.1, "frequency_penalty": 0.5,
                         "presence_penalty": -0.5, "n": 1, "seed": 42, "max_tokens": 16,
                         "stop": ["\n\n", "END"], "ignore_eos": False,
                         "reasoning_effort": "low",
                         "chat_template_kwargs": {"enable_thinking": True}},
        "ok-parts.json": {"model": "m", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
            "max_completion_tokens": 3, "stop": "x"},
        "bad-temperature.json": {"model": "m", "messages": user, "temperature": 5},
        "bad-no-model.json": {"messages": user},
        "ok-tool-round-trip.json": {"model": "m", "tools": tools, "tool_choice": "auto",
                                    "parallel_tool_calls": False, "messages": user + [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_0", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\": \"Lyon\"}"}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": "21 C"}]},
        "bad-tool-schema.json": {"model": "m", "messages": user, "tools": [
            {"type": "function", "function": {"name": "f", "parameters": {"properties": [1]}}}]},
        "bad-tool-choice.json": {"model": "m", "messages": user, "tools": tools,
                                 "tool_choice": {"type": "function", "function": {"name": "g"}}},
        "bad-image.json": {"model": "m", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "x"}}]}]},
        "bad-last-assistant.json": {"model": "m", "messages": [{"role": "assistant",
                                                                  "content": "x"}]},
        "bad-stop-many.json": {"model": "m", "messages": user, "stop": ["a"] * 17},
        "bad-n.json": {"model": "m", "messages": user, "n": 2},
    }
    out = {name: json.dumps(value).encode() for name, value in seeds.items()}
    out["bad-truncated.json"] = b'{"model": "m", "messages": ['
    out["bad-array.json"] = b"[1]"
    # json-glib 1.6 leaks a second top-level value and overflows its stack on deep nesting.
    out["bad-two-values.json"] = out["ok-minimal.json"] + b" [[1], [2], {}]"
    out["bad-two-objects.json"] = b"{}{}"
    out["bad-deep-nesting.json"] = b"[" * 65 + b"]" * 65
    # It also leaks its string buffer on a high surrogate followed by a broken escape.
    out["bad-broken-surrogate.json"] = b'" \\ud83d\\u}}00"'
    out["bad-broken-surrogate-in-request.json"] = (
        b'{"model": "m", "messages": [{"role": "user", "content": "\\ud83d\\u12"}]}')
    # Tool-call arguments are JSON in a string: parsed after the body's checks, so they
    # need their own (300,000 levels overflowed the stack of the server's parser).
    calls = {"model": "m", "messages": user + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "[" * 300000}}]},
        {"role": "tool", "tool_call_id": "c", "content": "x"}]}
    out["ok-deep-tool-arguments.json"] = json.dumps(calls).encode()
    calls["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"a": "\\ud83d\\u12"}'
    out["ok-broken-surrogate-tool-arguments.json"] = json.dumps(calls).encode()
    return out


def session_seeds():
    """Damaged copies of the real session files that fuzz-session.c wrote."""
    folder = os.path.join(ROOT, "session")
    good = read(folder, "ok-one-turn.session")
    flipped = bytearray(good)
    flipped[100] ^= 0x20
    magic = bytearray(good)
    magic[0:8] = b"BURROWSX"
    return {
        "bad-truncated-state.session": good[:-100],
        "bad-truncated-header.session": good[:60],
        "bad-flipped-message-byte.session": bytes(flipped),
        "bad-magic.session": bytes(magic),
        "bad-empty.session": b"",
    }


def generation_config_seeds():
    many = {"eos_token_id": list(range(300))}
    return {
        "ok-one-id.json": json.dumps({"bos_token_id": 1, "eos_token_id": 2,
                                      "do_sample": True, "temperature": 0.6}).encode(),
        "ok-id-list.json": json.dumps({"eos_token_id": [2, 7, 2, -1, 999, 1000, 1 << 40],
                                       "max_new_tokens": 128}).encode(),
        "ok-no-eos.json": b'{"_from_model_config": true, "transformers_version": "4.57.1"}',
        "ok-eos-of-other-type.json": b'{"eos_token_id": "2"}',
        "ok-escapes.json": b'{"note": "\\u00e9\\ud83d\\ude00\\n", "eos_token_id": [3]}',
        "bad-too-many-ids.json": json.dumps(many).encode(),
        "bad-array-root.json": b"[2]",
        "bad-two-values.json": b'{"eos_token_id": 2} {}',
        "bad-deep-nesting.json": b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}",
        "bad-broken-surrogate.json": b'{"eos_token_id": 2, "x": "\\ud83d\\u12"}',
        "bad-lone-surrogate.json": b'{"x": "\\udc00"}',
        "bad-not-utf8.json": b'{"x": "\xff"}',
        "bad-repeated-key.json": b'{"eos_token_id": 1, "eos_token_id": 2}',
        "bad-empty.json": b"",
    }


def template_config_seeds():
    seeds = {}
    for name in sorted(os.listdir(os.path.join(TESTS, "fixtures", "templates"))):
        path = os.path.join(TESTS, "fixtures", "templates", name, "template.jinja")
        if os.path.exists(path):
            text = read(path).decode()
            seeds["ok-" + name + ".json"] = json.dumps(
                {"bos_token": "<s>", "eos_token": {"content": "</s>", "special": True},
                 "chat_template": text}).encode()
    seeds["ok-template-list.json"] = json.dumps(
        {"chat_template": [{"name": "default", "template": "{{ messages[0].content }}"},
                           {"name": "tool_use", "template": "{{ tools | tojson }}"}]}).encode()
    seeds["ok-demo-model.json"] = read(DEMO, "tokenizer_config.json")
    seeds["ok-no-template.json"] = b'{"eos_token": "</s>"}'
    seeds["bad-template-number.json"] = b'{"chat_template": 3}'
    seeds["bad-template-list-entry.json"] = b'{"chat_template": [{"name": "default"}]}'
    seeds["bad-broken-surrogate.json"] = b'{"chat_template": "\\ud83d\\u}}00"}'
    seeds["bad-two-values.json"] = b'{"chat_template": "x"} []'
    seeds["bad-deep-nesting.json"] = b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}"
    return seeds

GGUF_TYPE_SIZES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),
                   8: (32, 34), 9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144),
                   13: (256, 176), 14: (256, 210), 15: (256, 292), 16: (256, 66),
                   17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18), 21: (256, 110),
                   22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4),
                   27: (1, 8), 28: (1, 8), 29: (256, 56), 30: (1, 2), 34: (256, 54),
                   35: (256, 66), 39: (32, 17)}


def gg_str(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack("<Q", len(b)) + b


def gg_kv(key, vtype, payload):
    return gg_str(key) + struct.pack("<I", vtype) + payload


def gg_file(kvs, tensors, version=3, align=32, data_len=None, n_tensors=None, n_kv=None):
    """tensors: (name, dims, type, offset); data_len defaults to what they need."""
    out = b"GGUF" + struct.pack("<IQQ", version,
                                len(tensors) if n_tensors is None else n_tensors,
                                len(kvs) if n_kv is None else n_kv)
    out += b"".join(kvs)
    need = 0
    for name, dims, gtype, offset in tensors:
        out += gg_str(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", gtype, offset)
        n = 1
        for d in dims:
            n *= d
        blk, size = GGUF_TYPE_SIZES.get(gtype, (1, 1))
        need = max(need, offset + n // blk * size)
    out += b"\0" * (-len(out) % align)
    return out + bytes(i * 7 & 0xFF for i in range(need if data_len is None else data_len))


def gguf_seeds():
    arch = gg_kv("general.architecture", 8, gg_str("deepseek2"))
    every_value = [
        arch,
        gg_kv("general.alignment", 4, struct.pack("<I", 32)),
        gg_kv("t.u8", 0, b"\x07"), gg_kv("t.i8", 1, b"\xf9"), gg_kv("t.u16", 2, b"\x01\x02"),
        gg_kv("t.i16", 3, b"\xff\xff"), gg_kv("t.i32", 5, struct.pack("<i", -5)),
        gg_kv("t.f32", 6, struct.pack("<f", 0.5)), gg_kv("t.bool", 7, b"\x01"),
        gg_kv("t.u64", 10, struct.pack("<Q", 1 << 40)), gg_kv("t.i64", 11, struct.pack("<q", -1)),
        gg_kv("t.f64", 12, struct.pack("<d", 1e-6)),
        gg_kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 3) + gg_str("a") + gg_str("bc")
              + gg_str("")),
        gg_kv("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 2) + struct.pack("<ff", 1, -2)),
        gg_kv("t.nested", 9, struct.pack("<IQ", 9, 2) + struct.pack("<IQ", 5, 1)
              + struct.pack("<i", 3) + struct.pack("<IQ", 8, 1) + gg_str("x")),
    ]
    three = [("token_embd.weight", [4, 2], 0, 0), ("blk.0.ffn_up_exps.weight", [32, 2, 2], 8, 32),
             ("blk.0.attn_norm.weight", [8], 0, 192)]
    all_types, off = [], 0
    for gtype, (blk, size) in sorted(GGUF_TYPE_SIZES.items()):
        all_types.append(("t%d" % gtype, [blk], gtype, off))
        off += (size + 31) // 32 * 32
    split = [gg_kv("split.no", 2, struct.pack("<H", 1)), gg_kv("split.count", 2, struct.pack("<H", 3)),
             gg_kv("split.tensors.count", 5, struct.pack("<i", 9))]
    seeds = {
        "ok-empty.gguf": gg_file([], []),
        "ok-v2.gguf": gg_file([arch], three[:1], version=2),
        "ok-every-value.gguf": gg_file(every_value, three),
        "ok-every-type.gguf": gg_file([arch], all_types),
        "ok-split-part.gguf": gg_file([arch] + split, three),
        "ok-align-64.gguf": gg_file([gg_kv("general.alignment", 4, struct.pack("<I", 64))],
                                    [("a", [16], 0, 0), ("b", [16], 0, 64)], align=64),
        "bad-magic.gguf": b"GGUX" + gg_file([], [])[4:],
        "bad-version-1.gguf": gg_file([], [], version=1),
        "bad-big-endian.gguf": b"GGUF" + struct.pack(">IQQ", 3, 0, 0),
        "bad-truncated-header.gguf": gg_file(every_value, three)[:200],
        "bad-truncated-data.gguf": gg_file(every_value, three)[:-1],
        "bad-huge-tensor-count.gguf": gg_file([], [], n_tensors=1 << 62),
        "bad-huge-kv-count.gguf": gg_file([], [], n_kv=1 << 62),
        "bad-huge-string.gguf": gg_file([gg_kv("k", 8, struct.pack("<Q", 1 << 62))], []),
        "bad-huge-array.gguf": gg_file([gg_kv("k", 9, struct.pack("<IQ", 8, 1 << 60))], []),
        "bad-offset-past-end.gguf": gg_file([], [("a", [8], 0, 4096)], data_len=32),
        "bad-overlap.gguf": gg_file([], [("a", [16], 0, 0), ("b", [16], 0, 32)]),
        "bad-misaligned.gguf": gg_file([], [("a", [4], 0, 4)]),
        "bad-alignment-3.gguf": gg_file([gg_kv("general.alignment", 4, struct.pack("<I", 3))], []),
        "bad-unknown-type.gguf": gg_file([], [("a", [4], 41, 0)], data_len=64),
        "bad-five-dims.gguf": gg_file([], [("a", [1, 1, 1, 1, 1], 0, 0)]),
        "bad-partial-block.gguf": gg_file([], [("a", [48], 8, 0)], data_len=64),
        "bad-duplicate-name.gguf": gg_file([], [("a", [4], 0, 0), ("a", [4], 0, 32)]),
        "bad-duplicate-key.gguf": gg_file([arch, arch], []),
        "bad-bool-2.gguf": gg_file([gg_kv("k", 7, b"\x02")], []),
        "bad-value-type.gguf": gg_file([gg_kv("k", 13, b"")], []),
    }
    # a real llama.cpp header (the data cut off): the metadata and names files really have
    real = os.path.join(TESTS, "fixtures", "gguf", "deepseek2-UD-IQ2_XXS-mix",
                        "deepseek2-UD-IQ2_XXS-mix.gguf")
    seeds["real-deepseek2-cut.gguf"] = read(real)[:65536]
    return seeds


def main():
    for sub, seeds in [("safetensors-header", safetensors_seeds()), ("gguf", gguf_seeds()),
                       ("config", config_seeds()),
                       ("index", index_seeds()), ("tiktoken", tiktoken_seeds()),
                       ("tokenizer-json", tokenizer_json_seeds()),
                       ("tokenizer-config", tokenizer_config_seeds()),
                       ("serve-request", serve_request_seeds()),
                       ("generation-config", generation_config_seeds()),
                       ("template-config", template_config_seeds()),
                       ("session", session_seeds())]:
        folder = os.path.join(ROOT, sub)
        os.makedirs(folder, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
