"""Export the trained demo model as a Kimi Linear checkpoint folder and write the test fixture.

    /usr/bin/python3 tests/demo/export.py [--work DIR] [--out data/demo-model]
                                          [--fixture tests/demo/demo-ref.json]

The folder gets config.json, tiktoken.model, tokenizer_config.json and two BF16 safetensors
shards with model.safetensors.index.json (A_log, dt_bias and e_score_correction_bias stay F32,
as in the release). The fixture is then computed from the exported files alone: the BF16 weights
are read back as float32 into kimi_linear.py, and for each prompt it records the greedy
continuation (prefill + one token a step with the recurrent cache, checked against recomputing
the whole prefix), the teacher-forced argmax at every position, the top-5 logits and the smallest
logit and routing margins, in the layout of the oracles' ref.json.
"""
import argparse
import json
import os
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bpe                  # noqa: E402
import kimi_linear as kl    # noqa: E402
import safetensors_io as st  # noqa: E402

F32_TENSORS = ("A_log", "dt_bias", "e_score_correction_bias")
N_NEW = 24
MIN_GAP = 1e-3

# Raw-text prompts (continued as prose) and chat prompts (one user turn).
PROMPTS = [
    ("text", "It is a truth universally acknowledged, that"),
    ("text", "The weather was so fine that Elizabeth"),
    ("chat", "Will you dance with me this evening?"),
    ("chat", "What do you think of Mr. Darcy?"),
]


def export_weights(state, out):
    tensors = {}
    for name, t in state.items():
        keep_f32 = name.endswith(F32_TENSORS)
        tensors[name] = t.float() if keep_f32 else t.to(torch.bfloat16)
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    acc, shard_of = 0, {}
    for name, t in tensors.items():          # model order: embeddings first, lm_head last
        shard_of[name] = 0 if acc < total / 2 else 1
        acc += t.numel() * t.element_size()
    st.write_sharded(out, tensors, lambda n: shard_of[n])


def load_exported(folder):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    model = kl.KimiLinear(cfg)
    model.load_state_dict(st.read_folder(folder), strict=True)
    model.eval()
    return model


@torch.no_grad()
def reference(model, prompt_ids, n_new, stop_id=None):
    """One fixture case in ref.json layout."""
    full = kl.greedy(model, prompt_ids, n_new, use_cache=True)
    again = kl.greedy(model, prompt_ids, n_new, use_cache=False)
    logits = model(torch.tensor([full]))[0]
    route_gap = min(moe.last_gap for moe in model.moe_layers())
    # Routing margins of the cached greedy run's decode steps are covered by the single
    # forward above: the same tokens at the same positions give the same routing inputs.
    top = torch.topk(logits, 5, dim=-1)
    gaps = (top.values[:, 0] - top.values[:, 1]).min().item()
    tf = logits.argmax(-1).tolist()
    n_prompt = len(prompt_ids)
    ref = {
        "prompt_ids": list(prompt_ids),
        "full_ids": full,
        "tf_pred": tf,
        "top5": {"logits": top.values.tolist(), "ids": top.indices.tolist()},
        "info": {
            "n_prompt": n_prompt,
            "n_generated": n_new,
            "greedy_with_cache_equals_greedy_without_cache": full == again,
            "tf_pred_matches_greedy_continuation": tf[n_prompt - 1:-1] == full[n_prompt:],
            "min_top1_top2_logit_gap": gaps,
            "min_moe_routing_gap": route_gap,
            "compute_dtype": "float32",
            "weights": "data/demo-model (BF16, A_log/dt_bias/e_score_correction_bias F32)",
        },
    }
    if stop_id is not None:
        gen = full[n_prompt:]
        ref["until_stop_ids"] = gen[:gen.index(stop_id) + 1] if stop_id in gen else gen
    return ref


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/burrow-demo-train")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "data", "demo-model"))
    ap.add_argument("--fixture", default=os.path.join(HERE, "demo-ref.json"))
    ap.add_argument("--min-gap", type=float, default=MIN_GAP,
                    help="smallest logit and routing margin a fixture prompt may have")
    args = ap.parse_args()
    torch.set_num_threads(1)

    os.makedirs(args.out, exist_ok=True)
    for f in os.listdir(args.out):
        if f.endswith(".safetensors") or f == "model.safetensors.index.json":
            os.unlink(os.path.join(args.out, f))
    for f in ("config.json", "tiktoken.model", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(args.work, f), os.path.join(args.out, f))
    state = torch.load(os.path.join(args.work, "model-f32.pt"))
    export_weights(state, args.out)

    model = load_exported(args.out)
    tok = bpe.Tokenizer.load(os.path.join(args.out, "tiktoken.model"))
    im_end = tok.specials["<|im_end|>"]
    cases = []
    for kind, text in PROMPTS:
        ids = tok.encode(bpe.chat_prompt(text) if kind == "chat" else text)
        case = reference(model, ids, N_NEW, stop_id=im_end)
        case["kind"] = kind
        case["prompt_text"] = text
        case["prompt_rendered"] = bpe.chat_prompt(text) if kind == "chat" else text
        case["completion_text"] = tok.decode(case["until_stop_ids"])
        ok = (case["info"]["greedy_with_cache_equals_greedy_without_cache"]
              and case["info"]["tf_pred_matches_greedy_continuation"]
              and case["info"]["min_top1_top2_logit_gap"] >= args.min_gap
              and case["info"]["min_moe_routing_gap"] >= args.min_gap)
        print("%s %r -> %r  gaps %.4g / %.4g %s" % (
            kind, text, case["completion_text"], case["info"]["min_top1_top2_logit_gap"],
            case["info"]["min_moe_routing_gap"], "ok" if ok else "REJECTED"))
        if ok:
            cases.append(case)
    if not cases:
        sys.exit("no prompt has margins >= %g" % args.min_gap)
    fixture = dict(cases[0])
    fixture["info"] = dict(fixture["info"], fixture="tests/demo/demo-ref.json")
    fixture["cases"] = cases
    with open(args.fixture, "w") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")
    sizes = {f: os.path.getsize(os.path.join(args.out, f)) for f in sorted(os.listdir(args.out))}
    print("files:", sizes, "total %.2f MB" % (sum(sizes.values()) / 1e6))


if __name__ == "__main__":
    main()
