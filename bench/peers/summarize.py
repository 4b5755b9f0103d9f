#!/usr/bin/python3
"""Summarize compare.py results: ranges per engine and speedups in same-round pairs.

    summarize.py RESULT.json [--burrow NAME] [--tsv]

Speedup = peer / Burrow for times (decode s/token, time to first token) and Burrow / peer for
rates (prefill tok/s), taken between the two engines' runs of the same kind (cold or warm) in
the same round, so that both saw the same minutes of machine load; >1 means Burrow is faster.
Burrow's expert reads (its --stats, load, prefill and decode together) are set against fio's rate at
queue depth 16 for the same read size, probed before and after the same round.
"""
import argparse
import json
import statistics


def rng(values, fmt="{:.3g}"):
    v = [x for x in values if x is not None]
    if not v:
        return "-"
    med = statistics.median(v)
    if len(v) == 1:
        return fmt.format(v[0])
    return f"{fmt.format(min(v))}-{fmt.format(max(v))} (median {fmt.format(med)}, n={len(v)})"


def burrow_reads(run):
    """Burrow's expert reads over the whole run (the load's warm start, prefill and decode):
    GB/s while in flight, seconds in flight, queue depth held (time-weighted), the load's
    own rate, and MB read per decode token."""
    st = run.get("stats") or {}
    tokens = {"prefill": run.get("prompt_tokens"), "decode": run.get("decode_forwards")}
    mb = secs = depth_s = 0.0
    for phase, s in st.items():
        if not s or not s.get("read_in_flight_s"):
            continue
        if phase == "load":
            mb += s["mb_read"]
        elif s.get("mb_read_per_token") is not None:
            mb += s["mb_read_per_token"] * (tokens[phase] or 0)
        else:
            continue
        secs += s["read_in_flight_s"]
        depth_s += (s.get("read_queue_depth") or 0) * s["read_in_flight_s"]
    dec = st.get("decode") or {}
    if not secs:
        return None
    return {"gb_s": mb / 1e3 / secs, "in_flight_s": secs, "depth": depth_s / secs,
            "load_gb_s": (st.get("load") or {}).get("read_gb_s"),
            "load_mb": (st.get("load") or {}).get("mb_read"),
            "decode_mb_per_token": dec.get("mb_read_per_token"), "decode_hit": dec.get("hit_rate")}


def fio_depth(rnd, depth):
    v = [d.get(depth) for d in (rnd.get("disk_mb_s_by_depth"), rnd.get("disk_mb_s_by_depth_after")) if d]
    v = [x for x in v if x]
    return sum(v) / len(v) if v else None


def print_reads(rounds, name):
    depths = sorted({int(k) for rnd in rounds for k in (rnd.get("disk_mb_s_by_depth") or {})})
    if depths:
        print("# fio by queue depth, before and after each round (MB/s, " +
              f"{rounds[0].get('probe_bs')} reads): " +
              ", ".join(f"QD{d} " + rng([fio_depth(rnd, str(d)) for rnd in rounds]) for d in depths))
    for cold in (True, False):
        rows = []
        for rnd in rounds:
            for r in rnd["runs"]:
                if r["engine"] == name and r["cold"] == cold and r["rc"] == 0:
                    b = burrow_reads(r)
                    if b:
                        b["of_qd16"] = (b["gb_s"] * 1e3 / fio_depth(rnd, "16")) if fio_depth(rnd, "16") else None
                        rows.append(b)
        if not rows:
            continue
        print(f"{name} expert reads, {'cold' if cold else 'warm'} (load, prefill and decode):")
        for key, label in (("gb_s", "GB/s while in flight"), ("of_qd16", "of fio QD16, same round"),
                           ("in_flight_s", "seconds in flight"), ("depth", "queue depth held"),
                           ("load_mb", "MB read while loading"), ("load_gb_s", "GB/s while loading"),
                           ("decode_mb_per_token", "decode MB read per token"),
                           ("decode_hit", "decode hit rate %")):
            print(f"\t{label}\t{rng([r[key] for r in rows])}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("--burrow", default="burrow")
    ap.add_argument("--tsv", action="store_true")
    a = ap.parse_args()
    with open(a.result) as f:
        res = json.load(f)
    rounds = res["rounds"]
    runs = [r for rnd in rounds for r in rnd["runs"]]
    names = list(res["engines"])
    print(f"# {a.result}: {res.get('started')} - {res.get('finished', '(unfinished)')}")
    print("# rates in the same minutes: disk " + rng([r.get("disk_mb_s") for r in rounds]) +
          " MB/s (fio O_DIRECT randread), memory " + rng([r.get("mem_gb_s") for r in rounds]) +
          " GB/s; load average (1 min) " + rng([x["loadavg"][0] for x in runs], "{:.1f}"))
    cols = [("decode_s_per_token", "decode s/token"), ("prefill_tok_s", "prefill tok/s"),
            ("ttft_s", "time to first token s"), ("wall_s", "whole run s"),
            ("peak_rss_gib", "peak RSS GiB"), ("cgroup_peak_gib", "cgroup peak GiB"),
            ("memory_prep_gb_s", "free memory written before, GB/s")]
    for name in names:
        for cold in (True, False):
            sel = [r for r in runs if r["engine"] == name and r["cold"] == cold]
            if not sel:
                continue
            fails = [f"{r['log']} rc={r['rc']}" + (" OOM" if r.get("oom_killed") else "")
                     for r in sel if r["rc"] != 0 or r.get("oom_killed")]
            print(f"{name}\t{'cold' if cold else 'warm'}\truns={len(sel)}\tfailed={fails or 0}")
            for key, label in cols:
                vals = [r.get(key) for r in sel]
                if any(v is not None for v in vals):
                    print(f"\t{label}\t{rng(vals)}")
            toks = sorted({(r.get("prompt_tokens"), r.get("generated")) for r in sel})
            print(f"\t(prompt tokens, generated)\t{toks}")
    print_reads(rounds, a.burrow)
    peers = [n for n in names if n != a.burrow]
    for peer in peers:
        for cold in (True, False):
            ratios = {"decode": [], "prefill": [], "ttft": []}
            for rnd in rounds:
                b = [r for r in rnd["runs"] if r["engine"] == a.burrow and r["cold"] == cold and r["rc"] == 0]
                p = [r for r in rnd["runs"] if r["engine"] == peer and r["cold"] == cold and r["rc"] == 0]
                if not b or not p:
                    continue
                b, p = b[0], p[0]
                if b.get("decode_s_per_token") and p.get("decode_s_per_token"):
                    ratios["decode"].append(p["decode_s_per_token"] / b["decode_s_per_token"])
                if b.get("prefill_tok_s") and p.get("prefill_tok_s"):
                    ratios["prefill"].append(b["prefill_tok_s"] / p["prefill_tok_s"])
                if b.get("ttft_s") and p.get("ttft_s"):
                    ratios["ttft"].append(p["ttft_s"] / b["ttft_s"])
            if any(ratios.values()):
                print(f"speedup of {a.burrow} over {peer}, {'cold' if cold else 'warm'}, same-round pairs:")
                for k, v in ratios.items():
                    print(f"\t{k}\t{rng(v, '{:.2f}')}")


if __name__ == "__main__":
    main()
