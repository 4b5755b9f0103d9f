// Writes tests/fixtures/text/expect-kimi-split.json: how Kimi's pre-tokenizer pattern
// splits every corpus string, computed with a JavaScript RegExp (v flag: native class
// intersection) as a reference independent of the PCRE2 translation in engine/text.
// Offsets are UTF-8 byte offsets into the string's UTF-8 form (after U+FFFD repair).
import fs from "node:fs";
import path from "node:path";
import { corpus } from "./corpus.mjs";
import { KIMI_PATTERN_JS } from "./kimi-pattern.mjs";

const OUT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../fixtures/text");
const td = new TextDecoder("utf-8", { fatal: false });
const te = new TextEncoder();

// Cases aimed at the pattern's corners (Han runs, case classes, contractions, digits,
// newlines); the C test also checks most of them against splits worked out by hand.
const SPLIT_CASES = [
  "\u4e2d\u6587\u5b57\u7b26", "Hello\u4e2d\u6587World", "HelloWorld", "XMLHttpRequest", "ABC",
  "don't DON'T they're It'S we'VE i'm you'll he'd", " it's", "12345", "1234567", "a\n\nb",
  "  \n  x", "\u03a9mega \u01c5ungla", "\u4e2d's", "abc123def", "$100", "hello   world",
  "\u3005\u3007\u30fc\u4e00", "\u4e2d\u3001\u6587", "\u30ab\u30bf\u30ab\u30ca\u6f22\u5b57", "e\u0301t\u00e9",
  "\u4e2d\u0301\u6587", "x\r\n\r\ny", "  \t", "end.\n", "ALLCAPS and lower", "'s'S", "a'sb",
  "\u0130stanbul \u0131", "\u2167\u2168 \u00bd\u00be", "\ud835\udc00\ud835\udc1a math",
];

const cases = [];
const add = (bytes, tag) => {
  const text = td.decode(bytes);
  const pieces = [];
  for (const m of text.matchAll(KIMI_PATTERN_JS)) {
    const start = te.encode(text.slice(0, m.index)).length;
    pieces.push([start, start + te.encode(m[0]).length]);
  }
  cases.push({ tag, text: Buffer.from(bytes).toString("base64"), pieces });
};
for (const s of SPLIT_CASES) add(te.encode(s), "split");
for (const { bytes, tag } of corpus({ rustOnly: true })) add(bytes, tag);

fs.writeFileSync(path.join(OUT, "expect-kimi-split.json"),
  JSON.stringify({ reference: `JavaScript RegExp (v flag), Node ${process.version}`, cases }) + "\n");
console.log(`kimi split: ${cases.length} cases`);
