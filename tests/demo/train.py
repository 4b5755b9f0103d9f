"""Train Burrow's bundled demo model: a tiny Kimi Linear on Jane Austen's novels.

Reproduce (offline, one CPU thread, see data/demo-model/README.md):
    apt-get install r-cran-janeaustenr python3-regex     # or: apt-get download + dpkg-deb -x
    nice /usr/bin/python3 tests/demo/train.py [--corpus DIR] [--work DIR]
    /usr/bin/python3 tests/demo/export.py [--work DIR]    # model folder + test fixture

Steps: read the six novels from r-cran-janeaustenr, hold out the last 3% of every novel, train a
2,048-rank byte-level BPE, build a token stream of prose paragraphs and chat exchanges (runs of
consecutive quoted speech become user/assistant turns in Kimi's chat format), and train with
AdamW for a fixed number of steps in a fixed order. Experts are kept in use by a small
switch-style balance loss plus the noaux_tc correction-bias nudge after every step. The work folder
gets tokenizer files, the float32 checkpoint and a log.
"""
import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bpe              # noqa: E402
import corpus           # noqa: E402
import kimi_linear as kl  # noqa: E402

SEED = 1234
N_BASE = 2048
VAL_FRACTION = 0.03
CHAT_PROBABILITY = 0.75
MAX_SPEECH_CHARS = 400
SEQ = 128
BATCH = 12
STEPS = 2000
WARMUP = 50
LR_PEAK = 3e-3
LR_FLOOR = 1e-4
WEIGHT_DECAY = 0.1
BIAS_RATE = 2e-3
AUX_WEIGHT = 0.03
CHUNK = 32
THREADS = 1    # bit-for-bit reproducible; a second thread was slower on a busy 2-core machine


def demo_config(oracle_config):
    """The oracle's full KimiLinearConfig serialisation with the demo's dimensions."""
    cfg = json.load(open(oracle_config))
    cfg.update({
        "hidden_size": 192,
        "num_hidden_layers": 4,
        "vocab_size": N_BASE + bpe.NUM_SPECIAL,
        "bos_token_id": N_BASE,
        "eos_token_id": N_BASE + 2,
        "pad_token_id": N_BASE + 255,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "head_dim": 48,
        "kv_lora_rank": 64,
        "qk_nope_head_dim": 32,
        "qk_rope_head_dim": 16,
        "v_head_dim": 32,
        "intermediate_size": 512,
        "moe_intermediate_size": 96,
        "num_experts": 16,
        "num_experts_per_token": 2,
        "num_shared_experts": 1,
        "linear_attn_config": {
            "full_attn_layers": [4],
            "head_dim": 32,
            "kda_layers": [1, 2, 3],
            "num_heads": 6,
            "short_conv_kernel_size": 4,
        },
    })
    return cfg


def is_speech(p):
    return p.startswith('"') and p.endswith('"') and p.count('"') == 2 \
        and len(p) <= MAX_SPEECH_CHARS


def chat_turns(user, assistant):
    return ("<|im_user|>user<|im_middle|>" + user[1:-1] + "<|im_end|>"
            "<|im_assistant|>assistant<|im_middle|>" + assistant[1:-1] + "<|im_end|>")


def build_stream(tok, paras, rng):
    """Token ids of the paragraphs in order; pairs of consecutive quoted speeches become a
    user/assistant exchange with probability CHAT_PROBABILITY."""
    ids, i = [], 0
    while i < len(paras):
        if i + 1 < len(paras) and is_speech(paras[i]) and is_speech(paras[i + 1]) \
                and rng.random() < CHAT_PROBABILITY:
            ids += tok.encode(chat_turns(paras[i], paras[i + 1]))
            i += 2
        else:
            ids += tok.encode_ordinary(paras[i] + "\n\n")
            i += 1
    return ids


def windows(stream, epoch_seed):
    """Non-overlapping SEQ+1 windows from a per-epoch offset, in a seeded random order."""
    rng = random.Random(epoch_seed)
    offset = rng.randrange(SEQ)
    starts = list(range(offset, len(stream) - SEQ - 1, SEQ))
    rng.shuffle(starts)
    return starts


def set_chunk(model, chunk):
    for layer in model.model.layers:
        if layer.is_kda:
            layer.self_attn.chunk = chunk


@torch.no_grad()
def evaluate(model, stream, max_batches=None, exact=True):
    """Mean next-token loss (nats/token) over consecutive SEQ windows of stream."""
    set_chunk(model, 0 if exact else CHUNK)
    model.eval()
    data = torch.tensor(stream)
    n_win = (len(stream) - 1) // SEQ
    total, count = 0.0, 0
    for b0 in range(0, n_win, BATCH):
        if max_batches is not None and b0 // BATCH >= max_batches:
            break
        rows = [data[w * SEQ:w * SEQ + SEQ + 1] for w in range(b0, min(b0 + BATCH, n_win))]
        x = torch.stack(rows)
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1),
                               reduction="sum")
        total += loss.item()
        count += x[:, 1:].numel()
    model.train()
    set_chunk(model, CHUNK)
    return total / count


def lr_at(step):
    if step < WARMUP:
        return LR_PEAK * (step + 1) / WARMUP
    frac = (step - WARMUP) / max(1, STEPS - WARMUP)
    return LR_FLOOR + 0.5 * (LR_PEAK - LR_FLOOR) * (1 + math.cos(math.pi * frac))


def make_optimizer(model):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if p.dim() >= 2 and "conv1d" not in name else no_decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=LR_PEAK, betas=(0.9, 0.95), eps=1e-8)


def nudge_router_bias(model):
    """Auxiliary-loss-free balancing: raise the bias of under-used experts, lower over-used."""
    loads = []
    for moe in model.moe_layers():
        counts = torch.bincount(moe.last_choice.reshape(-1), minlength=len(moe.experts)).float()
        moe.gate.e_score_correction_bias += BIAS_RATE * torch.sign(counts.mean() - counts)
        loads.append(counts / counts.sum())
    return loads


def train(model, stream, val, log):
    opt = make_optimizer(model)
    data = torch.tensor(stream)
    order, epoch, cursor = windows(stream, SEED), 0, 0
    set_chunk(model, CHUNK)
    model.train()
    t0, c0 = time.time(), time.process_time()
    for step in range(STEPS):
        if cursor + BATCH > len(order):
            epoch += 1
            order, cursor = windows(stream, SEED + epoch), 0
        x = torch.stack([data[s:s + SEQ + 1] for s in order[cursor:cursor + BATCH]])
        cursor += BATCH
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        aux = sum(moe.aux_loss for moe in model.moe_layers())
        opt.zero_grad(set_to_none=True)
        (loss + AUX_WEIGHT * aux).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        with torch.no_grad():
            loads = nudge_router_bias(model)
        if step % 25 == 0 or step == STEPS - 1:
            spread = " ".join("%.3f-%.3f" % (l.min().item(), l.max().item()) for l in loads)
            done = (step + 1) * BATCH * SEQ
            log("step %4d epoch %d loss %.4f lr %.2e  %.0f tok/s (%.0f per CPU s)  load %s" % (
                step, epoch, loss.item(), lr_at(step), done / (time.time() - t0),
                done / (time.process_time() - c0), spread))
        if step % 300 == 299:
            log("step %4d val loss (chunked, 8 batches) %.4f" % (
                step, evaluate(model, val, max_batches=8, exact=False)))
    return time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=corpus.PACKAGE_DATA,
                    help="janeaustenr's data folder (default: the installed package's)")
    ap.add_argument("--work", default="/tmp/burrow-demo-train", help="output folder")
    ap.add_argument("--oracle-config", default=os.path.join(
        HERE, "..", "fixtures", "oracles", "kimi_linear", "config.json"))
    ap.add_argument("--steps", type=int, default=0, help="override the step count (smoke tests)")
    args = ap.parse_args()
    if args.steps:
        globals()["STEPS"] = args.steps

    torch.set_num_threads(THREADS)
    torch.manual_seed(SEED)
    os.makedirs(args.work, exist_ok=True)
    logf = open(os.path.join(args.work, "train.log"), "w")

    def log(msg):
        print(msg, flush=True)
        logf.write(msg + "\n")
        logf.flush()

    train_paras, val_paras = corpus.split_paragraphs(corpus.read_novels(args.corpus),
                                                     VAL_FRACTION)
    tok = bpe.Tokenizer(bpe.train(train_paras, N_BASE))
    tok.write(args.work)
    stream = build_stream(tok, train_paras, random.Random(SEED))
    val = build_stream(tok, val_paras, random.Random(SEED + 1))
    log("paragraphs train %d val %d; tokens train %d val %d" % (
        len(train_paras), len(val_paras), len(stream), len(val)))

    cfg = demo_config(args.oracle_config)
    json.dump(cfg, open(os.path.join(args.work, "config.json"), "w"), indent=2, sort_keys=True)
    model = kl.KimiLinear(cfg)
    kl.init_weights(model, SEED)
    log("parameters %d" % kl.count_params(model))
    seconds = train(model, stream, val, log)
    log("trained %d steps (%d tokens) in %.0f s" % (STEPS, STEPS * BATCH * SEQ, seconds))
    torch.save(model.state_dict(), os.path.join(args.work, "model-f32.pt"))
    log("final val loss (exact recurrence, f32) %.4f nats/token" % evaluate(model, val))


if __name__ == "__main__":
    main()
