// The tokenizer test corpus: a list of byte strings (Uint8Array), deterministic.
// Hand-picked cases first, then invalid UTF-8, then seeded random mixtures.

const te = new TextEncoder();

const HAND = [
  // English prose and contractions
  "Hello, world!",
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure they'll say it's fine, but we'd've known.",
  "DON'T SHOUT. It'S NOT poLITE, they'RE told.",
  "She said: \"no\" -- and left.",
  "rock'n'roll isn't dead; y'all know",
  "Curly quotes \u2018like this\u2019 and \u201cthis\u201d",
  "It\u2019s a test of the typographic apostrophe",
  "e.g. i.e. etc. Mr. Smith vs. Dr. Jones",
  "Once upon a time, in a land far, far away, there lived a tokenizer that never split a word wrongly.",
  "a",
  " ",
  "",
  "  leading spaces",
  "trailing spaces   ",
  "tab\tseparated\tvalues\t",
  "line one\nline two\nline three\n",
  "windows\r\nline\r\nendings\r\n",
  "mixed \r\n\n\r \t \n  end",
  "\n\n\n\n",
  "     ",
  "a    b     c      d",
  "word\n    indented\n\tand tabbed",
  "\t\t\tx",
  " \n \n \n",
  "end with newline and spaces \n   ",
  // Case splitting
  "HelloWorld",
  "XMLHttpRequest",
  "iPhone iPad macOS",
  "camelCaseIdentifierName and snake_case_name and SCREAMING_CASE",
  "ÉCOLE Élève ÀÉÎÕÜ",
  "\u01c5ungla \u01c8udevit \u01c7ETTERS",
  "modifier \u02b0\u02b2 letters \u02e0x",
  "McDonald O'Neil MacArthur",
  "ABCdef GHIjkl mnoPQR",
  "ΑθήναΑΘΗΝΑ",
  "СЛОВОслово",
  // Code
  "int main(void) { return 0; }",
  "for (int i = 0; i < n; ++i) {\n    sum += a[i] * b[i];\n}\n",
  "def f(x):\n    return x ** 2 + 3*x - 1\n",
  "import numpy as np\narr = np.zeros((3, 4), dtype=np.float32)\n",
  "{\"key\": \"value\", \"list\": [1, 2, 3], \"nested\": {\"a\": null}}",
  "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
  "$ ls -la /usr/bin | grep -E '^-rwx' > out.txt 2>&1",
  "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
  "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
  "#include <stdio.h>\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n",
  "x=>x+1; a!==b && c||d ?? e",
  "// comment\n/* block\n   comment */\n",
  "https://example.com/path/to/page?query=1&other=two#frag",
  "user.name+tag@example.co.uk",
  "C:\\Windows\\System32\\drivers\\etc\\hosts",
  "    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n",
  "```python\nprint('hi')\n```",
  "a/b/c//d///e",
  "path/to/file.txt\n/usr/local/lib/",
  "...!!!???---___***",
  "!!!\n\n\n",
  "   !!!\r\n",
  // Numbers
  "0",
  "7",
  "42",
  "123",
  "1234",
  "12345",
  "1234567890",
  "3.14159265358979",
  "1,000,000.00",
  "-273.15\u00b0C",
  "2024-01-15T13:45:30Z",
  "+1 (555) 123-4567",
  "0x7fffffff 0b1010 0o777",
  "1e-10 6.022e23",
  "\u0663\u0664\u0665 Arabic-Indic digits",
  "\u0967\u0968\u0969 Devanagari digits",
  "\u2460\u2461\u2462 circled, \u00bd\u00bc fractions, \u2167\u216b roman",
  "\uff11\uff12\uff13 fullwidth digits",
  "v1.2.3-rc.4+build.567",
  "a1b22c333d4444e55555",
  "12ab34CD56",
  // CJK
  "\u4f60\u597d\uff0c\u4e16\u754c\uff01",
  "\u6211\u4eec\u4eca\u5929\u53bb\u516c\u56ed\u6563\u6b65\uff0c\u5929\u6c14\u5f88\u597d\u3002",
  "\u4e2d\u6587English\u6df7\u5408mixed\u6587\u672c",
  "\u4e2d\u3001\u6587\u3002\u5b57",
  "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002\u3072\u3089\u304c\u306a\u3068\u30ab\u30bf\u30ab\u30ca\u3002",
  "\u30b3\u30fc\u30d2\u30fc\u3068\u30c6\u30a3\u30fc",
  "\u6771\u4eac\u30bf\u30ef\u30fc\u306f333\u30e1\u30fc\u30c8\u30eb\u3067\u3059",
  "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc785\ub2c8\ub2e4. \uc548\ub155\ud558\uc138\uc694!",
  "\u3005\u3006\u3007 iteration marks",
  "\u2e80\u2f00 radicals \u31c0 strokes",
  "\ud840\udc00\ud869\udede CJK extension B",
  "\u9f98\u9fa5\u9fff\u4e00",
  "\u6f22\u5b57Kanji\u6f22\u5b57",
  "\u4f60\u597dworld\u4e16\u754cHello",
  "\uff08\u62ec\u5f27\uff09\u300c\u5f15\u7528\u300d\u3010\u6807\u9898\u3011",
  // Emoji
  "\ud83d\ude00\ud83d\ude03\ud83d\ude04",
  "I \u2764\ufe0f tokenizers \ud83d\ude80\ud83d\udd25",
  "\ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67\u200d\ud83d\udc66 family",
  "\ud83c\uddeb\ud83c\uddf7\ud83c\uddef\ud83c\uddf5 flags",
  "\ud83d\udc4d\ud83c\udffb\ud83d\udc4d\ud83c\udfff skin tones",
  "1\ufe0f\u20e3 #\ufe0f\u20e3 keycaps",
  "\ud83c\udff3\ufe0f\u200d\ud83c\udf08",
  "emoji\ud83d\ude00inside\ud83d\ude00words",
  "\u2603\u2764\u2728\u2b50",
  // Other scripts
  "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u041a\u0430\u043a \u0434\u0435\u043b\u0430?",
  "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u03ba\u03cc\u03c3\u03bc\u03b5",
  "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
  "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
  "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
  "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e0a\u0e32\u0e27\u0e42\u0e25\u0e01",
  "\u10d2\u10d0\u10db\u10d0\u10e0\u10ef\u10dd\u10d1\u10d0",
  "\u0540\u0561\u0575\u0565\u0580\u0565\u0576",
  "\u1200\u12ed\u1208 \u12a0\u121b\u122d\u129b",
  "Stra\u00dfe Gr\u00fc\u00dfe \u00e6\u00f8\u00e5 \u0153uvre",
  "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u",
  "mixed \u0440\u0443\u0441 English \u4e2d\u6587 \u0639\u0631\u0628\u064a",
  // Combining marks
  "e\u0301 a\u0300 o\u0302",
  "cafe\u0301 vs caf\u00e9",
  "a\u0300\u0301\u0302\u0303\u0304",
  "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u0334\u0335\u031c\u0330\u0354\u036b\u0357\u0362L\u0320\u0368\u0367\u0369\u0358G\u0334\u033b\u0348\u034d\u0354\u0339\u0311\u0357\u030e\u0305\u035b\u0301O",
  "\u0301 leading combining mark",
  "  \u0301\u0302 spaces then marks",
  "\u1100\u1161\u11a8 conjoining jamo",
  "n\u0303 n\u0303o",
  "\u0915\u094d\u0937 conjunct",
  // Long words
  "pneumonoultramicroscopicsilicovolcanoconiosis",
  "Donaudampfschifffahrtselektrizit\u00e4tenhauptbetriebswerkbauunterbeamtengesellschaft",
  "supercalifragilisticexpialidocious antidisestablishmentarianism",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "abababababababababababababababababababababababababababababab",
  "\u0644\u0644\u0644\u0644\u0644\u0644\u0644\u0644\u0644\u0644\u0644\u0644",
  "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
  // Unusual whitespace and invisible characters
  "non\u00a0breaking\u00a0space",
  "ideographic\u3000space\u3000\u3000x",
  "line\u2028separator\u2029para",
  "en\u2002em\u2003thin\u2009hair\u200a",
  "zero\u200bwidth\u200cjoin\u200dx",
  "soft\u00adhyphen",
  "bidi \u202eoverride\u202c end",
  "\u00a0\u00a0\u00a0",
  "a \u00a0b",
  // Markdown / LaTeX / misc
  "# Title\n\n- item one\n- item two\n\n**bold** and _italic_",
  "| a | b |\n|---|---|\n| 1 | 2 |",
  "$\\frac{a}{b} + \\sqrt{x^2 + y^2}$",
  "\\begin{equation} E = mc^2 \\end{equation}",
  "<s>[INST] hello [/INST]",
  "<|im_start|>user\nhi<|im_end|>",
  "<think>reasoning</think>answer",
  "&lt;&gt;&amp;&quot;",
  "\u00a9\u00ae\u2122\u00a7\u00b6\u2020\u2021",
  "\u2190\u2191\u2192\u2193\u21d2\u2200\u2203\u2208\u2211\u222b",
  "\u00bf\u00a1Qu\u00e9 tal!?",
  "\u300a\u4e66\u540d\u300b\u201c\u5f15\u53f7\u201d",
  "tab\t\t\tthen   spaces\n\n\tthen newline",
  "--flag=value -x -yz --no-color",
  "key:value;key2=value2,key3 value3",
  "\"quoted\" 'single' `back`",
  "(((nested))) [[[brackets]]] {{{braces}}}",
  "'s 't 're 've 'm 'll 'd",
  "'S 'T 'RE 'VE 'M 'LL 'D",
  "x's y't z're",
  "A's B'T C'Re",
  "\u4e2d's \u6587'll",
  "don't'll've",
  "123's 45'll",
  "'",
  "''''",
  " '",
  "\u00e9's caf\u00e9'd",
];

// Characters on which references disagree in ways that are not the tokenizer's
// business (JS \s vs Unicode White_Space, JS case folding): kept only where the
// reference is Rust (tiktoken).
export const RUST_ONLY = [
  "next\u0085line",
  "mongolian\u180evowel\u180e\u180e sep",
  "bom\ufeff\ufeffmark \ufeff x",
  "it'\u017f long s, 'K kelvin",
  "\u180e \u180e",
  "a\u0085\u0085 b",
];

// Ill-formed UTF-8 (kept as raw bytes).
const INVALID = [
  [0xff],
  [0x61, 0x62, 0x63, 0x80, 0x64, 0x65, 0x66],
  [0xe4, 0xb8],
  [0xe4, 0xb8, 0x41],
  [0xed, 0xa0, 0x80],
  [0xed, 0xa0, 0x80, 0xed, 0xb0, 0x80],
  [0xc0, 0xaf],
  [0xc1, 0xbf, 0x20, 0x78],
  [0xf4, 0x90, 0x80, 0x80],
  [0xf0, 0x9f, 0x98],
  [0xf0, 0x9f, 0x98, 0x20, 0xf0, 0x9f, 0x98, 0x80],
  [0xfe, 0xfe, 0xff, 0xff],
  [0x20, 0x80, 0x80, 0x80, 0x20],
  [0xe0, 0x80, 0x80],
  [0xe0, 0xa0],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0x48, 0x69, 0xc3],
  [0xc3, 0x28, 0x61],
  [0x48, 0x65, 0x6c, 0x6c, 0x6f, 0xc2, 0x20, 0x77, 0x6f, 0x72, 0x6c, 0x64],
  [0xe6, 0x97, 0xa5, 0xe6, 0x9c, 0xe6, 0x9c, 0xac],
  [0x0a, 0xa0, 0x0a, 0xa1],
  [0xf1, 0x80, 0x80],
  [0xef, 0xbf, 0xbd, 0xef, 0xbf],
];

// Mulberry32: a small seeded PRNG so the corpus never changes between runs.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FRAGMENTS = [
  "the", "The", "THE", "tokenizer", "model", " ", "  ", "   ", "\n", "\n\n", "\t", "\r\n",
  ",", ".", "!", "?", "...", "--", "'s", "'LL", "'d", "\"", "(", ")", "[", "]", "{", "}",
  "0", "12", "345", "6789", "2024", "3.5", "1e9", "\u4e2d\u6587", "\u6f22", "\u65e5\u672c",
  "\u3072\u3089\u304c\u306a", "\u30ab\u30bf\u30ab\u30ca", "\ud55c\uad6d\uc5b4", "\u041f\u0440\u0438\u0432\u0435\u0442",
  "\u03b1\u03b2\u03b3", "\u0645\u0631\u062d\u0628\u0627", "\u0928\u092e\u0938\u094d\u0924\u0947",
  "\ud83d\ude00", "\ud83d\ude80", "\u2764\ufe0f", "\ud83d\udc4d\ud83c\udffd", "e\u0301", "\u0301",
  "caf\u00e9", "na\u00efve", "\u00dcber", "HTTPServer", "getX", "iOS", "x86_64", "->", "=>", "::",
  "/*", "*/", "#", "@", "$", "%", "^", "&", "*", "_", "=", "+", "<", ">", "|", "\\", "/",
  "\u00a0", "\u3000", "\u2019", "\u201c", "\u201d", "\u2014", "\u2026", "\u00bd", "\u2167",
  "ABC", "xyz", "Qq", "z", "ll", "ve", "re", "don", "t", "won't", "I'm",
];

function randomStrings(count) {
  const r = rng(0x5eed1234);
  const out = [];
  for (let i = 0; i < count; i++) {
    const n = 1 + Math.floor(r() * (i % 7 === 0 ? 60 : 14));
    let s = "";
    for (let k = 0; k < n; k++) s += FRAGMENTS[Math.floor(r() * FRAGMENTS.length)];
    out.push(s);
  }
  return out;
}

// Random code points from a few blocks, to reach characters nobody thought of.
function randomCodepoints(count) {
  const r = rng(0xc0ffee);
  const ranges = [
    [0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x6ff],
    [0x900, 0x97f], [0xe00, 0xe7f], [0x2000, 0x206f], [0x2190, 0x22ff], [0x3000, 0x30ff],
    [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0xff00, 0xffef], [0x1f300, 0x1f64f],
  ];
  const out = [];
  for (let i = 0; i < count; i++) {
    const n = 1 + Math.floor(r() * 24);
    let s = "";
    for (let k = 0; k < n; k++) {
      const [lo, hi] = ranges[Math.floor(r() * ranges.length)];
      let cp = lo + Math.floor(r() * (hi - lo + 1));
      if (cp === 0x2028 || cp === 0x2029 || (cp >= 0x2060 && cp <= 0x206f)) cp = 0x20;
      s += String.fromCodePoint(cp);
    }
    out.push(s);
  }
  return out;
}

// A few long texts, to exercise long runs through the merge loop.
function longTexts() {
  const para = HAND.slice(0, 40).join(" ");
  return [
    para,
    para.repeat(3),
    "x".repeat(3000),
    " ".repeat(500) + "end",
    "\u4e2d".repeat(800),
    "1234567890".repeat(100),
    "\ud83d\ude00".repeat(300),
    "ab cd ".repeat(400),
  ];
}

// Returns [{ bytes: Uint8Array, tag }]; `rustOnly` adds the RUST_ONLY strings.
export function corpus({ rustOnly }) {
  const items = [];
  for (const s of HAND) items.push({ bytes: te.encode(s), tag: "hand" });
  if (rustOnly) for (const s of RUST_ONLY) items.push({ bytes: te.encode(s), tag: "rust-only" });
  for (const b of INVALID) items.push({ bytes: Uint8Array.from(b), tag: "invalid-utf8" });
  for (const s of randomStrings(160)) items.push({ bytes: te.encode(s), tag: "random-fragments" });
  for (const s of randomCodepoints(80)) items.push({ bytes: te.encode(s), tag: "random-codepoints" });
  for (const s of longTexts()) items.push({ bytes: te.encode(s), tag: "long" });
  return items;
}

// Strings that contain special-token text, encoded with specials allowed.
export const WITH_SPECIALS = [
  "<|endoftext|>",
  "Hello<|endoftext|>world",
  "a <|endoftext|> b <|endoftext|><|endoftext|>",
  "<|endoftext|\n<|endoftext",
  "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
  "prompt<|endofprompt|>",
  "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
  "<think>\nplan\n</think>\n\nanswer",
  "<\uff5cbegin\u2581of\u2581sentence\uff5c>Hi<\uff5cend\u2581of\u2581sentence\uff5c>",
  "x<|endoftext|><|im_end|>y",
];
