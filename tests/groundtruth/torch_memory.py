#!/usr/bin/env python3
"""Ground truth for gpuplan: measure what one eager PyTorch training step stores.

Builds a small decoder-only transformer (Llama-style or GPT-2-style, written like the
Hugging Face "eager" implementations, no transformers dependency), runs forward +
cross-entropy + backward + AdamW.step on random token ids (no dropout at all) and prints
JSON with byte counts of weights, gradients, optimizer state and saved activations.

Activations = every tensor autograd saves for backward during the forward pass, seen by a
torch.autograd.graph.saved_tensors_hooks pack hook, deduplicated by storage (each storage
counted once with its full nbytes), minus storages that belong to parameters (Linear saves
weight.t(), RMSNorm/LayerNorm save their weight: those are weights, not activations).
Nothing is filtered by size: int64 token ids and 4-byte scalars are counted too.

--recompute full wraps each block in torch.utils.checkpoint.checkpoint(use_reentrant=True).
In that mode the first forward of each block runs under no_grad, so the hooks see only the
tensors CheckpointFunction.save_for_backward()s: the block's tensor arguments, here only
the hidden states (cos/sin/mask are bound with functools.partial, as current HF does;
passing them positionally would add them too, deduped across layers). The block's
internals are re-saved during backward by the recomputation (hooks are not active there);
that transient per-layer peak is NOT part of activations_bytes.

Layouts that change the count: llama with kv_heads == 1 and micro_batch == 1 makes
repeat_kv and matmul's reshapes pure views, so k_rope and v_proj's output (s*b*kvdim each)
are saved instead of two s*b*h copies. On CPU, bf16 LayerNorm saves bf16 mean/rstd.

Run with Debian's torch: /usr/bin/python3 tests/groundtruth/torch_memory.py --arch llama
"""
import argparse, functools, json, math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def storage_of(t):
    """(key, nbytes) of the storage behind t (untyped_storage in torch>=2, storage in 1.13)."""
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return st.data_ptr(), st.nbytes()


# ----------------------------------------------------------------------------- llama
class RMSNorm(nn.Module):  # as HF LlamaRMSNorm
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(h)), eps

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)  # no-op in fp32; an fp32 copy in bf16
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dt)


class FusedRMSNormFn(torch.autograd.Function):
    """A one-kernel RMSNorm (as Transformer Engine, apex, Liger): saves x and the fp32 rstd only."""

    @staticmethod
    def forward(ctx, x, w, eps):
        rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, w, rstd)
        return (x.float() * rstd).to(x.dtype) * w

    @staticmethod
    def backward(ctx, g):
        x, w, rstd = ctx.saved_tensors
        xh = x.float() * rstd
        gx = g.float() * w.float()
        dx = rstd * (gx - xh * (gx * xh).mean(-1, keepdim=True))
        return dx.to(x.dtype), (g.float() * xh).sum(dim=tuple(range(g.dim() - 1))).to(w.dtype), None


class FusedSwiGLUFn(torch.autograd.Function):
    """silu(gate) * up in one kernel (Megatron bias_swiglu_fusion, Liger): saves gate and up only."""

    @staticmethod
    def forward(ctx, gate, up):
        ctx.save_for_backward(gate, up)
        return F.silu(gate) * up

    @staticmethod
    def backward(ctx, g):
        gate, up = ctx.saved_tensors
        sig = torch.sigmoid(gate)
        return g * up * sig * (1 + gate * (1 - sig)), g * gate * sig


class FusedRMSNorm(nn.Module):
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(h)), eps

    def forward(self, x):
        return FusedRMSNormFn.apply(x, self.weight, self.eps)


class LoRALinear(nn.Module):
    """PEFT-style LoRA (dropout 0 is the identity): frozen base + B(A(x)) * alpha / r."""

    def __init__(self, d_in, d_out, r, alpha):
        super().__init__()
        self.base = nn.Linear(d_in, d_out, bias=False)
        self.lora_A = nn.Linear(d_in, r, bias=False)
        self.lora_B = nn.Linear(r, d_out, bias=False)
        self.scale = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scale


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):  # HF: expand + reshape (a copy) unless n_rep == 1
    b, kv, s, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


class LlamaBlock(nn.Module):
    def __init__(self, a):
        super().__init__()
        h, self.nh, self.nkv = a.hidden, a.heads, a.kv_heads
        self.d = h // a.heads
        Norm = FusedRMSNorm if "norm" in a.fused else RMSNorm
        self.fused_act = "act" in a.fused
        self.input_layernorm, self.post_attention_layernorm = Norm(h), Norm(h)

        def lin(name, d_in, d_out):
            if a.lora_rank > 0 and name in a.lora_targets:
                return LoRALinear(d_in, d_out, a.lora_rank, 2 * a.lora_rank)
            return nn.Linear(d_in, d_out, bias=False)

        self.q_proj = lin("q_proj", h, self.nh * self.d)
        self.k_proj = lin("k_proj", h, self.nkv * self.d)
        self.v_proj = lin("v_proj", h, self.nkv * self.d)
        self.o_proj = lin("o_proj", self.nh * self.d, h)
        self.gate_proj = lin("gate_proj", h, a.ffn_hidden)
        self.up_proj = lin("up_proj", h, a.ffn_hidden)
        self.down_proj = lin("down_proj", a.ffn_hidden, h)

    def forward(self, x, cos, sin, mask):
        b, s, _ = x.shape
        res, x = x, self.input_layernorm(x)
        q = self.q_proj(x).view(b, s, -1, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, -1, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, -1, self.d).transpose(1, 2)
        c, sn = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * c) + (rotate_half(q) * sn)
        k = (k * c) + (rotate_half(k) * sn)
        k, v = repeat_kv(k, self.nh // self.nkv), repeat_kv(v, self.nh // self.nkv)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.d) + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(b, s, -1)
        x = res + self.o_proj(o)
        res, x = x, self.post_attention_layernorm(x)
        if self.fused_act:
            x = self.down_proj(FusedSwiGLUFn.apply(self.gate_proj(x), self.up_proj(x)))
        else:
            x = self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
        return res + x


# ----------------------------------------------------------------------------- gpt
class GPTBlock(nn.Module):
    def __init__(self, a):
        super().__init__()
        h, self.nh = a.hidden, a.heads
        self.d = h // a.heads
        self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.c_attn, self.c_proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.c_fc, self.c_fc_proj = nn.Linear(h, a.ffn_hidden), nn.Linear(a.ffn_hidden, h)

    def forward(self, x, mask):
        b, s, h = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
        q, k, v = (t.view(b, s, self.nh, self.d).permute(0, 2, 1, 3) for t in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d) + mask
        w = F.softmax(w, dim=-1)
        o = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(b, s, h)
        x = x + self.c_proj(o)
        return x + self.c_fc_proj(F.gelu(self.c_fc(self.ln_2(x))))


# ----------------------------------------------------------------------------- model
class Model(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.a = a
        self.embed = nn.Embedding(a.vocab, a.hidden)
        if a.arch == "gpt":
            self.wpe = nn.Embedding(a.seq_len, a.hidden)
            self.norm = nn.LayerNorm(a.hidden)
        else:
            self.norm = FusedRMSNorm(a.hidden) if "norm" in a.fused else RMSNorm(a.hidden)
            d = a.hidden // a.heads
            self.register_buffer("inv_freq", 1.0 / 10000.0 ** (torch.arange(0, d, 2).float() / d))
        Block = GPTBlock if a.arch == "gpt" else LlamaBlock
        self.layers = nn.ModuleList(Block(a) for _ in range(a.layers))
        self.lm_head = nn.Linear(a.hidden, a.vocab, bias=False)
        for m in self.modules():  # GPT-2/Llama-like init (std 0.02) so the loss is sane
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
        if a.tied:
            self.lm_head.weight = self.embed.weight

    def forward(self, ids):
        s = ids.shape[1]
        pos = torch.arange(s, device=ids.device).unsqueeze(0)  # [1, s] as in HF
        x = self.embed(ids)
        mask = torch.full((s, s), torch.finfo(x.dtype).min, dtype=x.dtype, device=ids.device).triu(1)[None, None]
        if self.a.arch == "gpt":
            x = x + self.wpe(pos)
            extra = dict(mask=mask)
        else:
            with torch.no_grad():  # HF LlamaRotaryEmbedding (cos/sin shared by all layers)
                f = (self.inv_freq.float()[None, :, None] @ pos[:, None, :].float()).transpose(1, 2)
                emb = torch.cat((f, f), dim=-1)
            extra = dict(cos=emb.cos().to(x.dtype), sin=emb.sin().to(x.dtype), mask=mask)
        for layer in self.layers:
            if self.a.recompute == "full":  # only x is a checkpoint argument (as in current HF)
                x = checkpoint(functools.partial(layer, **extra), x, use_reentrant=True)
            else:
                x = layer(x, **extra)
        return self.lm_head(self.norm(x))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--arch", choices=["llama", "gpt"], default="llama")
    for name, val in [("layers", 2), ("hidden", 256), ("heads", 8), ("kv-heads", 0),
                      ("ffn-hidden", 0), ("vocab", 1000), ("seq-len", 128),
                      ("micro-batch", 2), ("tied", -1), ("seed", 0)]:
        p.add_argument("--" + name, type=int, default=val)
    p.add_argument("--recompute", choices=["none", "full"], default="none")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--fused", default="", help="comma list of norm,act: one-kernel RMSNorm / SwiGLU (llama)")
    p.add_argument("--lora-rank", type=int, default=0, help="LoRA rank (0: full training)")
    p.add_argument("--lora-targets", default="q_proj,v_proj", help="comma list of adapted projections (llama)")
    a = p.parse_args()
    a.fused = [x for x in a.fused.split(",") if x]
    a.lora_targets = [x for x in a.lora_targets.split(",") if x]
    a.kv_heads = a.kv_heads or a.heads
    a.ffn_hidden = a.ffn_hidden or (4 * a.hidden if a.arch == "gpt" else 688)
    if a.tied < 0:
        a.tied = 1 if a.arch == "gpt" else 0
    torch.manual_seed(a.seed)
    dtype = torch.float32 if a.dtype == "fp32" else torch.bfloat16
    model = Model(a).to(dtype).train()
    ids = torch.randint(0, a.vocab, (a.micro_batch, a.seq_len))
    targets = torch.randint(0, a.vocab, (a.micro_batch * a.seq_len,))
    if a.lora_rank > 0:  # the base frozen, the adapters trainable (PEFT)
        for n, t in model.named_parameters():
            t.requires_grad_("lora_" in n)
    all_params = list(model.parameters())  # shared (tied) parameters listed once
    params = [t for t in all_params if t.requires_grad]
    param_storages = {storage_of(t)[0] for t in all_params}

    # Pack hook records every saved tensor; unpack records which one was asked for, so
    # walking the graph afterwards (reading node._saved_*) names the op that saved it.
    packed, last_unpacked = [], []

    def pack(t):
        packed.append(t)
        return len(packed) - 1

    def unpack(i):
        last_unpacked.append(i)
        return packed[i]

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        logits = model(ids)
        loss = F.cross_entropy(logits.float().view(-1, a.vocab), targets)

    op_of, seen, stack = {}, set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names = [n for n in dir(node) if n.startswith("_saved_")]
        if "saved_tensors" in dir(node):  # custom autograd.Function (checkpoint)
            names.append("saved_tensors")
        for n in names:
            del last_unpacked[:]
            try:
                getattr(node, n)
            except Exception:
                continue
            for i in last_unpacked:
                op_of[i] = node.name()
        stack.extend(fn for fn, _ in node.next_functions)

    saved, counted, savers = [], {}, {}
    for i, t in enumerate(packed):
        key, nbytes = storage_of(t)
        is_param = key in param_storages
        new = not is_param and key not in counted
        if not is_param:
            counted[key] = nbytes
            savers.setdefault(key, set()).add(op_of.get(i, "?"))
        saved.append({"op": op_of.get(i, "?"), "shape": list(t.shape),
                      "dtype": str(t.dtype).replace("torch.", ""), "bytes": t.numel() * t.element_size(),
                      "storage_bytes": nbytes, "storage": "param" if is_param else ("new" if new else "dup")})

    act_bytes = sum(counted.values())
    # torch 1.13 quirk: MeanBackward1 (mean over a dim, used by RMSNorm) saves its whole input
    # (x.pow(2)) because its formula uses self.sym_numel(); torch >= 2 saves only the number.
    # Storages kept alive only by MeanBackward1 are reported so they can be subtracted.
    mean_only = sum(n for k, n in counted.items() if savers[k] == {"MeanBackward1"})

    loss.backward()
    opt = torch.optim.AdamW(params, lr=1e-3)
    opt.step()
    nb = lambda t: t.numel() * t.element_size()
    # AdamW's 'step' is a 1-element fp32 tensor per parameter in torch 1.13: reported
    # separately as optimizer_step_bytes and NOT included in optimizer_bytes (gpuplan ignores it).
    opt_bytes = step_bytes = 0
    for st in opt.state.values():
        for k, v in st.items():
            if torch.is_tensor(v):
                if k == "step":
                    step_bytes += nb(v)
                else:
                    opt_bytes += nb(v)
    print(json.dumps({
        "args": vars(a), "loss": loss.item(), "params": sum(t.numel() for t in all_params),
        "trainable_params": sum(t.numel() for t in params), "weights_bytes": sum(nb(t) for t in all_params),
        "gradients_bytes": sum(nb(t.grad) for t in params if t.grad is not None),
        "optimizer_bytes": opt_bytes, "optimizer_step_bytes": step_bytes,
        "activations_bytes": act_bytes,
        "mean_input_bytes_torch113_only": mean_only, "saved": saved}, indent=1))


if __name__ == "__main__":
    main()
