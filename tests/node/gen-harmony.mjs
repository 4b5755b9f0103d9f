// Writes gpt-oss's tokenizer as a tokenizer.json and its reference ids under
// tests/fixtures/text/:
//  - o200k_harmony/tokenizer.json.gz: o200k_base's ranks from the npm tiktoken package as a
//    Hugging Face BPE tokenizer.json the way gpt-oss ships its tokenizer: byte-level vocab,
//    the merges of every split of a token into two tokens (ordered by the merged token's
//    rank, then by the halves' ranks), the o200k pattern as a Split pre-tokenizer before a
//    regex-free ByteLevel, and the harmony special tokens (o200k_harmony) as added tokens;
//  - expect-tiktoken-harmony.json: ids from the official tiktoken (Rust core, npm WASM
//    build) with o200k_base's ranks and the harmony specials, for every corpus string, plus
//    harmony conversations with and without special tokens.
import { Tiktoken } from "tiktoken";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { createRequire } from "node:module";
import { corpus, WITH_SPECIALS } from "./corpus.mjs";

const require = createRequire(import.meta.url);
const OUT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../fixtures/text");
const VERSION = JSON.parse(fs.readFileSync(new URL("./node_modules/tiktoken/package.json", import.meta.url))).version;
const td = new TextDecoder("utf-8", { fatal: false });
const te = new TextEncoder();
const b64 = (u8) => Buffer.from(u8).toString("base64");

// o200k_harmony: o200k_base's specials, then the harmony ones and the reserved range.
function harmonySpecials(base) {
  const named = {
    "<|startoftext|>": 199998, "<|endoftext|>": 199999, "<|return|>": 200002,
    "<|constrain|>": 200003, "<|channel|>": 200005, "<|start|>": 200006, "<|end|>": 200007,
    "<|message|>": 200008, "<|call|>": 200012,
  };
  const out = { ...base, ...named };
  const taken = new Set(Object.values(out));
  for (let id = 200000; id < 201088; id++)
    if (!taken.has(id)) out[`<|reserved_${id}|>`] = id;
  return out;
}

// GPT-2's byte-to-character table of byte-level BPE.
function byteChars() {
  const keep = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const map = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++)
    map[b] = String.fromCodePoint(keep.includes(b) ? b : 256 + extra++);
  return map;
}

function tokenizerJson(enc, pattern, specials) {
  const chars = byteChars();
  const text = (bytes) => Array.from(bytes, (b) => chars[b]).join("");
  const rankOf = new Map();        // latin1 key of the bytes -> rank
  const tokens = [];
  const specialIds = new Set(Object.values(specials));
  for (let rank = 0; !specialIds.has(rank); rank++) {
    let bytes;
    try {
      bytes = enc.decode_single_token_bytes(rank);
    } catch {
      break;
    }
    tokens.push(bytes);
    rankOf.set(Buffer.from(bytes).toString("latin1"), rank);
  }
  const vocab = {};
  const merges = [];
  tokens.forEach((bytes, rank) => {
    vocab[text(bytes)] = rank;
    const key = Buffer.from(bytes).toString("latin1");
    const local = [];
    for (let i = 1; i < key.length; i++) {
      const l = rankOf.get(key.slice(0, i)), r = rankOf.get(key.slice(i));
      if (l !== undefined && r !== undefined) local.push([l, r]);
    }
    local.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const [l, r] of local) merges.push([text(tokens[l]), text(tokens[r])]);
  });
  const added = Object.entries(specials)
    .sort((a, b) => a[1] - b[1])
    .map(([content, id]) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
                               normalized: false, special: true }));
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: pattern }, behavior: "Isolated", invert: false },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null,
             end_of_word_suffix: null, fuse_unk: false, byte_fallback: false,
             ignore_merges: false, vocab, merges },
  };
}

const HARMONY_SPECIALS = [
  "<|start|>system<|message|>You are ChatGPT.\nReasoning: medium<|end|><|start|>user<|message|>Hi \u{1F98A}<|end|><|start|>assistant",
  "<|start|>assistant<|channel|>analysis<|message|>Think: 2+2=4.<|end|><|start|>assistant<|channel|>final<|message|>4<|return|>",
  "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Z\u00fcrich\"}<|call|>",
  "<|startoftext|>x<|endoftext|><|constrain|>json<|reserved_200013|><|endofprompt|>",
  "<|end|\n<|end <|message|",
];

const data = require("tiktoken/encoders/o200k_base.json");
const specials = harmonySpecials(data.special_tokens);
const enc = new Tiktoken(data.bpe_ranks, specials, data.pat_str);
const json = tokenizerJson(enc, data.pat_str, specials);
const dir = path.join(OUT, "o200k_harmony");
fs.mkdirSync(dir, { recursive: true });
fs.writeFileSync(path.join(dir, "tokenizer.json.gz"), zlib.gzipSync(JSON.stringify(json), { level: 9 }));

const cases = [];
for (const { bytes, tag } of corpus({ rustOnly: true })) {
  const ids = Array.from(enc.encode_ordinary(td.decode(bytes)));
  cases.push({ tag, text: b64(bytes), special: true, ids, decoded: b64(enc.decode(Uint32Array.from(ids))) });
}
for (const s of [...WITH_SPECIALS, ...HARMONY_SPECIALS]) {
  for (const special of [true, false]) {
    const ids = Array.from(special ? enc.encode(s, "all") : enc.encode_ordinary(s));
    cases.push({ tag: "specials", text: b64(te.encode(s)), special, ids, decoded: b64(enc.decode(Uint32Array.from(ids))) });
  }
}
const doc = { reference: `tiktoken ${VERSION} (npm, Rust core), o200k_base ranks + harmony specials`,
              tokenizer: "o200k_harmony/tokenizer.json.gz", cases };
fs.writeFileSync(path.join(OUT, "expect-tiktoken-harmony.json"), JSON.stringify(doc) + "\n");
console.log(`o200k_harmony: ${Object.keys(json.model.vocab).length} ranks, ${json.model.merges.length} merges, ${cases.length} cases`);
enc.free();
