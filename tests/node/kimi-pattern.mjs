// Kimi's pre-tokenizer pattern (pat_str of tokenization_kimi.py, as ARCHITECTURES.md 5.1
// lists it), verbatim in Rust regex syntax, and an independent JavaScript translation.
export const KIMI_PATTERN = [
  "[\\p{Han}]+",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "\\p{N}{1,3}",
  " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*",
  "\\s*[\\r\\n]+",
  "\\s+(?!\\S)",
  "\\s+",
].join("|");

// The same pattern for a JS RegExp with the v flag: class intersection is native there;
// Rust's \p{Han} is the Script property; Rust's \s is White_Space (JS's \s is not: it
// lacks U+0085 and has U+FEFF); Node 20 has no (?i:...) groups, so the suffix lists the
// case variants Rust's simple case folding accepts (s also matches U+017F).
const CONTRACTIONS = "(?:'[sS\\u017F]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const UPPER = "[[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]&&[^\\p{Script=Han}]]";
const LOWER = "[[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]&&[^\\p{Script=Han}]]";
export const KIMI_PATTERN_JS = new RegExp([
  "[\\p{Script=Han}]+",
  `[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+${CONTRACTIONS}?`,
  `[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*${CONTRACTIONS}?`,
  "\\p{N}{1,3}",
  " ?[^\\p{White_Space}\\p{L}\\p{N}]+[\\r\\n]*",
  "\\p{White_Space}*[\\r\\n]+",
  "\\p{White_Space}+(?!\\P{White_Space})",
  "\\p{White_Space}+",
].join("|"), "gv");
