#!/usr/bin/env python3
"""Ground-truth test: gpuplan's memory prediction vs what PyTorch actually stores.

For several small Llama-style and GPT-style shapes, with and without full recompute, runs
torch_memory.py (a real training step on the CPU, Debian's python3-torch) and
`gpuplan memory --json` for the same shape (fp32, eager attention), and compares weights,
gradients, optimizer states and saved activations. Fails if any differs by more than 5%. The
MECHANISMS cases run the same comparison with fused RMSNorm/SwiGLU kernels and with LoRA (frozen
base, adapters trained), each described to gpuplan by its own flags.

torch 1.13 (Debian 12) keeps one extra s*b*h tensor per RMSNorm that torch >= 2 does not
(MeanBackward saves its whole input); gpuplan models current PyTorch, so those bytes, which
the script reports separately, are subtracted from the measurement.

usage: compare_torch.py PATH/TO/gpuplan
"""
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOL = 0.05

CASES = [
    # arch, layers, hidden, heads, kv_heads, ffn, vocab, seq, batch, recompute
    ("llama", 2, 256, 8, 2, 688, 1000, 128, 2, "none"),
    ("llama", 2, 256, 8, 2, 688, 1000, 128, 2, "full"),
    ("llama", 3, 128, 4, 4, 352, 2000, 256, 1, "none"),
    ("llama", 2, 192, 6, 3, 512, 500, 64, 4, "none"),
    ("llama", 4, 128, 8, 2, 384, 800, 96, 2, "full"),
    ("gpt", 2, 256, 4, 4, 1024, 1000, 128, 2, "none"),
    ("gpt", 2, 256, 4, 4, 1024, 1000, 128, 2, "full"),
    ("gpt", 3, 192, 6, 6, 768, 3000, 200, 1, "none"),
    ("gpt", 2, 128, 2, 2, 512, 700, 64, 3, "none"),
]

# Mechanisms (docs/model/memory.md §3.1-§3.3), llama shapes, no recompute: extra torch_memory.py
# flags and the gpuplan flags that describe the same run.
#   fused: a one-kernel RMSNorm (keeps x and rstd) and SwiGLU (keeps gate and up);
#   lora: a frozen base (no gradients or optimizer state, frozen projections keep no input) with
#   rank-8 adapters (PEFT-style, alpha 16). Layer 0 under LoRA keeps less than the model counts
#   (its input norm needs no gradient: the embedding is frozen), so those cases use 6 layers.
MECHANISMS = [
    (("llama", 2, 256, 8, 2, 688, 1000, 128, 2, "none"), ["--fused", "norm,act"], ["--fused-ops", "norm,act"]),
    (("llama", 3, 192, 6, 3, 512, 500, 64, 4, "none"), ["--fused", "norm,act"], ["--fused-ops", "norm,act"]),
    (("llama", 6, 256, 8, 2, 688, 1000, 128, 2, "none"), ["--lora-rank", "8", "--lora-targets", "q_proj,v_proj"],
     ["--method", "lora", "--lora-rank", "8", "--lora-alpha", "16", "--lora-targets", "q_proj,v_proj"]),
    (("llama", 6, 192, 6, 3, 512, 500, 64, 4, "none"),
     ["--lora-rank", "8", "--lora-targets", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"],
     ["--method", "lora", "--lora-rank", "8", "--lora-alpha", "16", "--lora-targets", "all-linear"]),
    (("llama", 6, 256, 8, 2, 688, 1000, 128, 2, "none"), ["--lora-rank", "8", "--lora-targets", "q_proj,v_proj", "--fused", "norm,act"],
     ["--method", "lora", "--lora-rank", "8", "--lora-alpha", "16", "--lora-targets", "q_proj,v_proj", "--fused-ops", "norm,act"]),
    # bf16 (torch's CPU bf16 kernels): the eager RMSNorm keeps its fp32 upcast of the input.
    (("llama", 6, 256, 8, 2, 688, 1000, 128, 2, "none"), ["--dtype", "bf16"], ["--precision", "bf16", "--master-weights", "none"]),
    (("llama", 6, 256, 8, 2, 688, 1000, 128, 2, "none"), ["--dtype", "bf16", "--lora-rank", "8", "--lora-targets", "q_proj,v_proj"],
     ["--precision", "bf16", "--master-weights", "none", "--method", "lora", "--lora-rank", "8", "--lora-alpha", "16", "--lora-targets", "q_proj,v_proj"]),
]


def torch_measure(c, extra=()):
    arch, L, h, a, kv, f, V, s, b, rc = c
    cmd = ["/usr/bin/python3", os.path.join(HERE, "torch_memory.py"), "--arch", arch, "--layers", str(L),
           "--hidden", str(h), "--heads", str(a), "--kv-heads", str(kv), "--ffn-hidden", str(f), "--vocab", str(V),
           "--seq-len", str(s), "--micro-batch", str(b), "--recompute", rc, "--tied", "1" if arch == "gpt" else "0"] + list(extra)
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    out["activations_bytes"] -= out.get("mean_input_bytes_torch113_only", 0)
    return out


def gpuplan_predict(binary, c, extra=()):
    arch, L, h, a, kv, f, V, s, b, rc = c
    args = [binary, "memory", "--json", "--layers", str(L), "--hidden", str(h), "--heads", str(a),
            "--kv-heads", str(kv), "--ffn-hidden", str(f), "--vocab", str(V), "--seq-len", str(s),
            "--micro-batch", str(b), "--recompute", rc, "--precision", "fp32", "--flash-attention", "false",
            "--gpu", "h100-sxm-80gb"]
    if arch == "gpt":
        args += ["--mlp", "gelu", "--norm", "layernorm", "--norm-bias", "true", "--linear-bias", "true",
                 "--tied-embeddings", "true", "--position", "learned", "--max-positions", str(s)]
    else:
        args += ["--mlp", "swiglu", "--norm", "rmsnorm", "--position", "rotary"]
    if "--precision" in extra:  # the case's own precision replaces the fp32 default
        i = args.index("--precision")
        del args[i:i + 2]
    res = subprocess.run(args + list(extra), capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit("gpuplan failed: " + res.stderr)
    return json.loads(res.stdout)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    binary = sys.argv[1]
    keys = [("weights_bytes", "weights_bytes"), ("gradients_bytes", "gradients_bytes"),
            ("optimizer_bytes", "optimizer_bytes"), ("activations_bytes", "activations_bytes")]
    print(f"{'case':<44} {'quantity':<18} {'torch':>12} {'gpuplan':>12} {'err_%':>7}")
    passed = failed = 0
    runs = [(c, (), (), "") for c in CASES] + [(c, t, g, " " + " ".join(t)) for c, t, g in MECHANISMS]
    for c, torch_extra, gp_extra, note in runs:
        meas = torch_measure(c, torch_extra)
        pred = gpuplan_predict(binary, c, gp_extra)
        label = "{}-L{}-h{}-a{}/{}-f{}-V{}-s{}-b{}-{}".format(*c)
        # the base model's count (LoRA adapters are counted apart, as trainable parameters)
        base = meas["params"] - (meas["trainable_params"] if "--lora-rank" in torch_extra else 0)
        ok = pred["model"]["params"] == base
        print(f"{label:<44} {'params':<18} {base:>12} {pred['model']['params']:>12} {'exact' if ok else 'DIFF':>7}{note}")
        for mk, pk in keys:
            m, p = meas[mk], pred["per_gpu"][pk]
            err = (p - m) / m
            bad = abs(err) > TOL
            ok = ok and not bad
            print(f"{'':<44} {mk:<18} {m:>12.0f} {p:>12.0f} {100 * err:>+7.2f}{'  <-- over 5%' if bad else ''}")
        if ok:
            passed += 1
        else:
            failed += 1
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
