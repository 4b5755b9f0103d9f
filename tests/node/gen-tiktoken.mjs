// Writes the tiktoken reference data under tests/fixtures/text/:
//  - cl100k_base/ and o200k_base/: the npm package's ranks as tiktoken.model.gz plus a
//    tokenizer_config.json naming their special tokens;
//  - expect-tiktoken-*.json: ids from the official tiktoken (Rust, via its npm WASM build)
//    for every corpus string, with the encodings' own patterns and with Kimi's pattern.
// Input bytes that are not UTF-8 reach tiktoken as JS strings decoded with U+FFFD
// replacement (TextDecoder), which is what the C side must reproduce.
import { Tiktoken } from "tiktoken";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { createRequire } from "node:module";
import { corpus, WITH_SPECIALS } from "./corpus.mjs";
import { KIMI_PATTERN } from "./kimi-pattern.mjs";

const require = createRequire(import.meta.url);
const OUT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../fixtures/text");
const VERSION = JSON.parse(fs.readFileSync(new URL("./node_modules/tiktoken/package.json", import.meta.url))).version;
const td = new TextDecoder("utf-8", { fatal: false });
const b64 = (u8) => Buffer.from(u8).toString("base64");

function writeModel(name, enc, specials) {
  const dir = path.join(OUT, name);
  fs.mkdirSync(dir, { recursive: true });
  const specialIds = new Set(Object.values(specials));
  const lines = [];
  for (let rank = 0; ; rank++) {
    if (specialIds.has(rank)) break;
    let bytes;
    try {
      bytes = enc.decode_single_token_bytes(rank);
    } catch {
      break;
    }
    lines.push(`${b64(bytes)} ${rank}\n`);
  }
  const text = lines.join("");
  fs.writeFileSync(path.join(dir, "tiktoken.model.gz"), zlib.gzipSync(text, { level: 9 }));
  const decoder = {};
  for (const [content, id] of Object.entries(specials))
    decoder[String(id)] = { content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: true };
  fs.writeFileSync(path.join(dir, "tokenizer_config.json"),
    JSON.stringify({ added_tokens_decoder: decoder }, null, 2) + "\n");
  return lines.length;
}

function expectations(enc, file, meta) {
  const cases = [];
  for (const { bytes, tag } of corpus({ rustOnly: true })) {
    const ids = Array.from(enc.encode_ordinary(td.decode(bytes)));
    cases.push({ tag, text: b64(bytes), special: false, ids, decoded: b64(enc.decode(Uint32Array.from(ids))) });
  }
  for (const s of WITH_SPECIALS) {
    const ids = Array.from(enc.encode(s, "all"));
    const bytes = new TextEncoder().encode(s);
    cases.push({ tag: "specials", text: b64(bytes), special: true, ids, decoded: b64(enc.decode(Uint32Array.from(ids))) });
  }
  const doc = { reference: `tiktoken ${VERSION} (npm, Rust core)`, ...meta, cases };
  fs.writeFileSync(path.join(OUT, file), JSON.stringify(doc) + "\n");
  return cases.length;
}

for (const [name, patternName] of [["cl100k_base", "cl100k"], ["o200k_base", "o200k"]]) {
  const data = require(`tiktoken/encoders/${name}.json`);
  const enc = new Tiktoken(data.bpe_ranks, data.special_tokens, data.pat_str);
  const n = writeModel(name, enc, data.special_tokens);
  const c = expectations(enc, `expect-tiktoken-${patternName}.json`,
    { tokenizer: `${name}/tiktoken.model.gz`, pattern: patternName });
  console.log(`${name}: ${n} ranks, ${c} cases`);
  if (name === "o200k_base") {
    const kimi = new Tiktoken(data.bpe_ranks, data.special_tokens, KIMI_PATTERN);
    const k = expectations(kimi, "expect-tiktoken-kimi-o200k.json",
      { tokenizer: `${name}/tiktoken.model.gz`, pattern: "kimi" });
    console.log(`kimi pattern over ${name}: ${k} cases`);

  }

}
