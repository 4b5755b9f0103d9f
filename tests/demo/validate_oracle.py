"""Check kimi_linear.py against the Kimi Linear oracle (reference code's outputs).

Usage: python3 validate_oracle.py [ORACLE_DIR]  (default: tests/fixtures/oracles/kimi_linear)
Exits non-zero on any mismatch.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kimi_linear as kl          # noqa: E402
import safetensors_io as st       # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def load(folder):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    model = kl.KimiLinear(cfg)
    model.load_state_dict(st.read_folder(folder), strict=True)
    model.eval()
    return model


def check(folder, ref):
    model = load(folder)
    full = ref["full_ids"]
    n_prompt = len(ref["prompt_ids"])
    n_new = len(full) - n_prompt
    ok = True
    with torch.no_grad():
        logits = model(torch.tensor([full]))[0]
    tf = logits.argmax(-1).tolist()
    if tf != ref["tf_pred"]:
        ok = False
        print("tf_pred mismatch at", [i for i, (a, b) in enumerate(zip(tf, ref["tf_pred"])) if a != b])
    for use_cache in (True, False):
        got = kl.greedy(model, ref["prompt_ids"], n_new, use_cache)
        if got != full:
            ok = False
            print("greedy (cache=%s) mismatch:" % use_cache, got)
    if "top5" in ref:
        want = torch.tensor(ref["top5"]["logits"])
        top = torch.topk(logits, 5, dim=-1)
        err = (top.values - want).abs().max().item()
        ids_ok = top.indices.tolist() == ref["top5"]["ids"]
        print("top5 ids match: %s, max |logit err| %.3g" % (ids_ok, err))
        ok = ok and ids_ok and err < 1e-4
    print("tf_pred %d positions, greedy %d tokens: %s" % (len(tf), n_new, "OK" if ok else "FAIL"))
    return ok


if __name__ == "__main__":
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        HERE, "..", "fixtures", "oracles", "kimi_linear")
    ref = json.load(open(os.path.join(folder, "ref.json")))
    sys.exit(0 if check(folder, ref) else 1)
