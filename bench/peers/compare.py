#!/usr/bin/python3
"""Run Burrow and a peer engine side by side, alternating, and write every run as JSON.

    compare.py --out FILE.json --rounds N [--append] [--warm] [--cgroup-limit BYTES]
               [--prepare-memory]
               [--probe-file F --probe-bs 16M --probe-depths 4 --probe-seconds 8]
               [--burrow-cli PATH] --engine NAME::COMMAND --engine NAME::COMMAND

Each COMMAND is a shell command line for one complete run (load, prompt, 16 tokens, exit).
Per round the engines run in turn (the order flips every round): each one cold (sync, page
cache dropped) and, with --warm, once more straight after with the page cache kept. Before
every round the disk (fio, O_DIRECT random reads of --probe-bs from --probe-file at each of
--probe-depths, and again after the round) and the memory (`burrow-cli bench kernels`, BF16
matvec, its mem_gbps) are measured, so the rates belong to the same minutes as the runs. With
--cgroup-limit every engine run goes into a cgroup v1 memory group with that limit (the group's
peak usage and OOM kills are recorded). --append adds the rounds to FILE.json's (the order
keeps flipping), so that a long set can run one round per quiet command. --prepare-memory
writes once through the free memory (MemFree: the page cache stays) before every run: a VM
whose host takes free memory back (free page reporting) makes the next process that touches it
pay 1-3 s of CPU a GB, which a desktop does not pay and which falls on whatever engine touches
new memory (the first after the fio probe; a warm run whose cache grows); page cache filled
from the disk costs the guest nothing. The rate of that pass is kept per run
(memory_prep_gb_s: slow when the host had taken the memory).

Per run: wall seconds, peak RSS (/usr/bin/time -v), prompt and generated token counts, prefill
seconds and tok/s, decode seconds per token (the forwards after the first token), time to first
token (wall - decode time: process start to the first token known), exit status, and the load
average; for Burrow also its --stats per phase (load, prefill, decode): expert hit rate, MB read
per token, the read rate while reads were in flight, that time, the queue depth held, and the
seconds per token in each model phase. Needs root (drop_caches, cgroups). Engine output is kept in FILE.logs/.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time

CGROUP = "/sys/fs/cgroup/memory/bench-peers"


def sh(cmd, **kw):
    # errors="replace": a synthetic vocabulary may print bytes that are not UTF-8
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, errors="replace", **kw)


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


# Writes through MemFree less 1 GiB of anonymous memory, then exits (the memory is freed).
TOUCH_FREE = """
import mmap
n = next(int(l.split()[1]) * 1024 for l in open('/proc/meminfo') if l.startswith('MemFree:'))
n = max(0, n - (1 << 30)) >> 26 << 26
m = mmap.mmap(-1, max(n, 1 << 26))
block = b'\\1' * (1 << 26)
for off in range(0, n, 1 << 26):
    m[off:off + (1 << 26)] = block
print(n)
"""


def prepare_memory():
    """GB/s of one write through the free memory (see --prepare-memory)."""
    t0 = time.monotonic()
    r = sh(f"/usr/bin/python3 -c {shlex.quote(TOUCH_FREE)}")
    try:
        return round(int(r.stdout.strip()) / 1e9 / (time.monotonic() - t0), 2)
    except ValueError:
        return None


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def probe_disk(path, bs, depth, seconds):
    """MB/s of O_DIRECT random reads of BS bytes from PATH, DEPTH reads in flight."""
    if not path:
        return None
    r = sh(f"fio --name=probe --filename={shlex.quote(path)} --readonly --direct=1 "
           f"--rw=randread --bs={bs} --iodepth={depth} --ioengine=libaio --runtime={seconds} "
           f"--time_based --output-format=json")
    try:
        job = json.loads(r.stdout)["jobs"][0]["read"]
        return round(job["bw_bytes"] / 1e6, 1)
    except (ValueError, KeyError, IndexError):
        return None


def probe_disk_depths(a):
    return {str(d): probe_disk(a.probe_file, a.probe_bs, d, a.probe_seconds)
            for d in a.probe_depths}


def probe_memory(cli):
    if not cli:
        return None
    r = sh(f"{shlex.quote(cli)} bench kernels --json --threads 2 -f bf16 -k matvec -r 2")
    for line in r.stdout.splitlines():
        try:
            return json.loads(line)["mem_gbps"]
        except (ValueError, KeyError):
            continue
    return None


def cgroup_setup(limit):
    os.makedirs(CGROUP, exist_ok=True)
    for name, value in (("memory.limit_in_bytes", limit), ("memory.max_usage_in_bytes", 0)):
        with open(os.path.join(CGROUP, name), "w") as f:
            f.write(f"{value}\n")


def cgroup_read(name):
    try:
        with open(os.path.join(CGROUP, name)) as f:
            return f.read()
    except OSError:
        return ""


def num(pattern, text, group=1, conv=float):
    m = re.search(pattern, text, re.M)
    return conv(m.group(group)) if m else None


def burrow_phase(text, what):
    """One phase's --stats block of burrow-cli run (the header line and its indented lines)."""
    m = re.search(rf"^{what}: .*\n((?:  .*\n)*)", text, re.M)
    if not m:
        return None
    block = m.group(1)
    r = {"hit_rate": num(r"experts: hit rate ([\d.]+)%", block),
         "mb_read_per_token": num(r"([\d.]+) MB read per token", block),
         "read_gb_s": num(r"reads: ([\d.]+) GB/s while in flight", block),
         "read_in_flight_s": num(r"while in flight \(([\d.]+) s\)", block),
         "read_queue_depth": num(r"queue depth ([\d.]+)", block)}
    per = re.search(r"per token: (.*)", block)
    if per:
        r["per_token_s"] = {k: float(v) for k, v in re.findall(r"([a-z ]+?) ([\d.]+) s", per.group(1))}
        r["per_token_s"] = {k.strip(): v for k, v in r["per_token_s"].items()}
    return r


def parse(text, wall):
    """Pull the numbers out of whichever engine wrote TEXT (Burrow, rabbit or llama.cpp)."""
    r = {}
    if re.search(r"^prefill: \d+ tokens in", text, re.M):  # burrow-cli run --stats
        r["engine_kind"] = "burrow"
        r["prompt_tokens"] = num(r"^prefill: (\d+) tokens", text, conv=int)
        r["prefill_s"] = num(r"^prefill: \d+ tokens in ([\d.]+) s", text)
        n = num(r"^decode: (\d+) tokens", text, conv=int)
        d = num(r"^decode: \d+ tokens in ([\d.]+) s", text)
        r["generated"] = (n or 0) + 1
        r["decode_s"] = d
        r["decode_forwards"] = n
        r["expert_wait_per_token"] = num(r"^decode:.*\n(?:  (?!per token).*\n)*  per token: .*expert wait ([\d.]+) s", text)
        r["decode_hit_rate"] = num(r"^decode:.*\n  experts: hit rate ([\d.]+)%", text)
        r["stats"] = {w: burrow_phase(text, w) for w in ("prefill", "decode")}
        m = re.search(r"^load: experts ([\d.]+) MB read, ([\d.]+) GB/s while in flight "
                      r"\(([\d.]+) s\), queue depth ([\d.]+)", text, re.M)
        if m:  # the warm start's reads while loading
            r["stats"]["load"] = {"mb_read": float(m.group(1)), "read_gb_s": float(m.group(2)),
                                  "read_in_flight_s": float(m.group(3)),
                                  "read_queue_depth": float(m.group(4))}
    elif "prefill done in" in text:  # rabbit --prompt
        r["engine_kind"] = "rabbit"
        r["prompt_tokens"] = num(r"^prompt: (\d+) tokens", text, conv=int)
        r["prefill_s"] = num(r"prefill done in ([\d.]+)s", text)
        steps = [float(x) for x in re.findall(r"^  token \d+/\d+ in ([\d.]+)s", text, re.M)]
        r["generated"] = num(r"^(\d+) tokens in [\d.]+s", text, conv=int)
        total = num(r"^\d+ tokens in ([\d.]+)s", text)
        # The last token is sampled without a forward; every other one costs one step.
        r["decode_forwards"] = max(len(steps) - 1, 0) if steps else None
        r["decode_s"] = (total - r["prefill_s"]) if total is not None and r["prefill_s"] is not None else None
        r["load_s"] = num(r"loaded in ([\d.]+)s", text)
        r["expert_wait_s"] = num(r"expert wait \(disk\) ([\d.]+)s", text)
    elif re.search(r"(common|llama)_perf(_context)?_print", text):  # llama-completion
        r["engine_kind"] = "llama.cpp"
        r["load_s"] = (num(r"load time =\s+([\d.]+) ms", text) or 0) / 1e3
        r["prompt_tokens"] = num(r"prompt eval time =\s+[\d.]+ ms /\s+(\d+) tokens", text, conv=int)
        r["prefill_s"] = (num(r"prompt eval time =\s+([\d.]+) ms", text) or 0) / 1e3
        r["decode_forwards"] = num(r"(?<!prompt )eval time =\s+[\d.]+ ms /\s+(\d+) runs", text, conv=int)
        r["decode_s"] = (num(r"(?<!prompt )eval time =\s+([\d.]+) ms", text) or 0) / 1e3
        r["generated"] = (r["decode_forwards"] or 0) + 1
        # the CPU backend ggml loaded (llama-isa.sh may hold it to AVX2)
        r["isa"] = "avx512" if "AVX512 = 1" in text else "avx2" if "AVX2 = 1" in text else None
    if r.get("prefill_s") and r.get("prompt_tokens"):
        r["prefill_tok_s"] = round(r["prompt_tokens"] / r["prefill_s"], 3)
    if r.get("decode_s") is not None and r.get("decode_forwards"):
        r["decode_s_per_token"] = round(r["decode_s"] / r["decode_forwards"], 4)
    if r.get("decode_s") is not None:
        r["ttft_s"] = round(wall - r["decode_s"], 2)
    r["peak_rss_gib"] = round((num(r"Maximum resident set size \(kbytes\): (\d+)", text, conv=int)
                               or 0) / 2**20, 3)
    return r


def run_one(name, cmd, cold, limit, logdir, tag, prepare=False):
    prep = None
    if cold:
        drop_caches()
    if prepare:
        prep = prepare_memory()
    pre = "" if not limit else f"echo $$ > {CGROUP}/cgroup.procs && "
    if limit:
        cgroup_setup(limit)
    oom_before = num(r"oom_kill (\d+)", cgroup_read("memory.oom_control"), conv=int) or 0
    la = loadavg()
    t0 = time.monotonic()
    p = sh(f"{pre}exec /usr/bin/time -v sh -c {shlex.quote(cmd)}")
    wall = time.monotonic() - t0
    text = p.stdout + "\n" + p.stderr
    with open(os.path.join(logdir, f"{tag}.log"), "w") as f:
        f.write(f"$ {cmd}\n{text}")
    r = {"engine": name, "cold": cold, "rc": p.returncode, "wall_s": round(wall, 2),
         "loadavg": la, "log": f"{tag}.log"}
    if prep is not None:
        r["memory_prep_gb_s"] = prep
    r.update(parse(text, wall))
    if limit:
        r["cgroup_limit"] = limit
        r["cgroup_peak_gib"] = round(int(cgroup_read("memory.max_usage_in_bytes") or 0) / 2**30, 3)
        oom_after = num(r"oom_kill (\d+)", cgroup_read("memory.oom_control"), conv=int) or 0
        r["oom_killed"] = oom_after > oom_before
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--append", action="store_true")
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--prepare-memory", action="store_true")
    ap.add_argument("--cgroup-limit", type=int, default=0)
    ap.add_argument("--probe-file")
    ap.add_argument("--probe-bs", default="16M")
    ap.add_argument("--probe-depths", default="4",
                    type=lambda v: [int(x) for x in v.split(",")])
    ap.add_argument("--probe-seconds", type=int, default=8)
    ap.add_argument("--burrow-cli")
    ap.add_argument("--engine", action="append", required=True, help="NAME::COMMAND")
    a = ap.parse_args()
    engines = [e.split("::", 1) for e in a.engine]
    if any(len(e) != 2 for e in engines):
        sys.exit("compare.py: --engine takes NAME::COMMAND")
    logdir = a.out + ".logs"
    os.makedirs(logdir, exist_ok=True)
    result = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "host": os.uname().nodename, "nproc": os.cpu_count(),
              "engines": {n: c for n, c in engines}, "rounds": []}
    if a.append and os.path.exists(a.out):
        with open(a.out) as f:
            result = json.load(f)
        if result["engines"] != {n: c for n, c in engines}:
            sys.exit(f"compare.py: {a.out} was run with other engine commands")
        result.pop("finished", None)
    first = len(result["rounds"])
    for i in range(first, first + a.rounds):
        order = engines if i % 2 == 0 else engines[::-1]
        disk = probe_disk_depths(a)
        rnd = {"round": i + 1, "loadavg": loadavg(), "probe_bs": a.probe_bs,
               "disk_mb_s": disk.get("4", next(iter(disk.values()))), "disk_mb_s_by_depth": disk,
               "mem_gb_s": probe_memory(a.burrow_cli), "runs": []}
        for name, cmd in order:
            for cold in ([True, False] if a.warm else [True]):
                tag = f"r{i + 1}-{name}-{'cold' if cold else 'warm'}"
                r = run_one(name, cmd, cold, a.cgroup_limit, logdir, tag, a.prepare_memory)
                rnd["runs"].append(r)
                print(json.dumps(r), flush=True)
        rnd["disk_mb_s_by_depth_after"] = probe_disk_depths(a)
        result["rounds"].append(rnd)
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1)
        os.replace(tmp, a.out)
    result["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with open(a.out + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()
