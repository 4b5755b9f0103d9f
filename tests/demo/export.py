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
MIN_NEW = 8
MIN_GAP = 1e-3          # top-1 minus top-2 logit
MIN_ROUTE_GAP = 2e-4    # k-th minus (k+1)-th expert score, as in the oracle fixtures

# Candidate prompts, raw text (continued as prose) and chat (one user turn); the fixture keeps
# the first CASES_PER_KIND of each kind whose decisions all have margins >= --min-gap.
PROMPTS = [
    ("text", "\"I am"),
    ("text", "\"My dear"),
    ("text", "Sir Thomas"),
    ("text", "It is a truth universally acknowledged, that"),
    ("text", "The weather was so fine that Elizabeth"),
    ("text", "Mrs. Bennet was"),
    ("chat", "What do you think of Mr. Darcy?"),
    ("chat", "Where is your sister?"),
    ("chat", "How is your mother?"),
    ("chat", "Will you dance with me this evening?"),
    ("chat", "I have been walking all the morning."),
    ("chat", "Good morning!"),
    ("chat", "Do you like the country?"),
    ("chat", "Is he a good man?"),
    ("chat", "Tell me about your family."),
]
CASES_PER_KIND = 2


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
def margins(model, ids):
    """Per position: the top-1 minus top-2 logit, and the smallest routing margin (k-th minus
    (k+1)-th choice score) over the MoE layers; plus the logits."""
    logits = model(torch.tensor([ids]))[0]
    top2 = torch.topk(logits, 2, dim=-1).values
    route = torch.stack([moe.last_gaps for moe in model.moe_layers()]).min(0).values
    return (top2[:, 0] - top2[:, 1]), route, logits


@torch.no_grad()
def reference(model, prompt_ids, n_new, stop_id, min_gap, min_route_gap, min_new):
    """One fixture case in ref.json layout, or None. The continuation is cut before the first
    position whose logit margin is below min_gap or routing margin below min_route_gap (a
    decision float rounding could flip); None when fewer than min_new tokens remain."""
    n_prompt = len(prompt_ids)
    full = kl.greedy(model, prompt_ids, n_new, use_cache=True)
    logit_gap, route_gap, _ = margins(model, full)
    bad = ((logit_gap < min_gap) | (route_gap < min_route_gap)).nonzero()
    if len(bad):
        n_new = min(n_new, int(bad[0]) - n_prompt)
    if n_new < min_new:
        return None
    full = full[:n_prompt + n_new]
    again = kl.greedy(model, prompt_ids, n_new, use_cache=False)
    logit_gap, route_gap, logits = margins(model, full)
    top = torch.topk(logits, 5, dim=-1)
    tf = logits.argmax(-1).tolist()
    gen = full[n_prompt:]
    return {
        "prompt_ids": list(prompt_ids),
        "full_ids": full,
        "tf_pred": tf,
        "top5": {"logits": top.values.tolist(), "ids": top.indices.tolist()},
        "until_stop_ids": gen[:gen.index(stop_id) + 1] if stop_id in gen else gen,
        "info": {
            "n_prompt": n_prompt,
            "n_generated": n_new,
            "greedy_with_cache_equals_greedy_without_cache": full == again,
            "tf_pred_matches_greedy_continuation": tf[n_prompt - 1:-1] == gen,
            "min_top1_top2_logit_gap": logit_gap.min().item(),
            "min_moe_routing_gap": route_gap.min().item(),
            "compute_dtype": "float32",
            "weights": "data/demo-model (BF16, A_log/dt_bias/e_score_correction_bias F32)",
        },
    }


@torch.no_grad()
def sample(model, prompt_ids, n_new, stop_id, temperature=0.8, top_k=40, seed=0):
    """A sampled continuation (for the README's examples; not part of the fixture)."""
    gen = torch.Generator().manual_seed(seed)
    cache = model.new_cache()
    feed, out = list(prompt_ids), []
    for _ in range(n_new):
        logits = model(torch.tensor([feed]), cache)[0, -1] / temperature
        top = torch.topk(logits, top_k)
        nxt = int(top.indices[torch.multinomial(torch.softmax(top.values, -1), 1, generator=gen)])
        out.append(nxt)
        if nxt == stop_id:
            break
        feed = [nxt]
    return out


SAMPLE_PROMPTS = [
    ("text", "It is a truth universally acknowledged, that"),
    ("text", "Emma could not"),
    ("chat", "Do you dance, Mr. Darcy?"),
    ("chat", "How is your mother?"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/burrow-demo-train")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "data", "demo-model"))
    ap.add_argument("--fixture", default=os.path.join(HERE, "demo-ref.json"))
    ap.add_argument("--min-gap", type=float, default=MIN_GAP,
                    help="smallest top-1 minus top-2 logit a fixture position may have")
    ap.add_argument("--min-route-gap", type=float, default=MIN_ROUTE_GAP,
                    help="smallest expert-choice score margin a fixture position may have")
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
        if sum(c["kind"] == kind for c in cases) >= CASES_PER_KIND:
            continue
        ids = tok.encode(bpe.chat_prompt(text) if kind == "chat" else text)
        case = reference(model, ids, N_NEW, im_end, args.min_gap, args.min_route_gap, MIN_NEW)
        if case is None or not (case["info"]["greedy_with_cache_equals_greedy_without_cache"]
                                and case["info"]["tf_pred_matches_greedy_continuation"]):
            print("%s %r: rejected (margins or cache check)" % (kind, text))
            continue
        case["kind"] = kind
        case["prompt_text"] = text
        case["prompt_rendered"] = bpe.chat_prompt(text) if kind == "chat" else text
        case["completion_text"] = tok.decode(case["until_stop_ids"])
        print("%s %r -> %r  (%d tokens, margins %.4g / %.4g)" % (
            kind, text, case["completion_text"], case["info"]["n_generated"],
            case["info"]["min_top1_top2_logit_gap"], case["info"]["min_moe_routing_gap"]))
        cases.append(case)
    for kind, text in SAMPLE_PROMPTS:
        ids = tok.encode(bpe.chat_prompt(text) if kind == "chat" else text)
        for seed in range(2):
            out = sample(model, ids, 48, im_end, seed=seed)
            print("sample (T=0.8, top-40, seed %d) %s %r -> %r" % (seed, kind, text,
                                                                  tok.decode(out)))
    if not cases:
        sys.exit("no prompt has large enough margins")
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
