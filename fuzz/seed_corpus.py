#!/usr/bin/env python3
"""Regenerates fuzz/corpus/ (the seed inputs) from examples/, tests/fixtures/, data/*.csv and
shared/validation/. Run from the repository root: python3 fuzz/seed_corpus.py. Small on purpose:
every file under 64 KiB, the whole corpus well under 2 MB. libFuzzer keeps what it finds in a
scratch folder (build-fuzz/corpus/), not here."""
import csv, io, json, os, shutil, sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "validation")


def put(harness, name, text):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    assert len(data) < 64 * 1024, name
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def csv_subset(path, picks):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(rows[0])
    for i in picks:
        if 1 <= i < len(rows):
            w.writerow(rows[i])
    return out.getvalue()


JOB_WORDS = """model preset config params name layers hidden heads kv_heads head_dim ffn_hidden vocab mlp norm
norm_bias linear_bias qkv_bias tied_embeddings position max_positions experts experts_per_token shared_experts
moe_ffn_hidden dense_layers dropout training method seq_len micro_batch global_batch tokens samples epochs
tokens_per_sample precision optimizer recompute flash_attention lora rank alpha targets data_bytes_per_token
checkpoint_interval_min checkpoint_async checkpoint_full_state parallel tp pp dp cp vpp ep sequence_parallel zero
offload cluster gpu num_gpus gpus_per_node intra_node network nics_per_node gpudirect_rdma oversubscription storage
cpu_cores_per_gpu constraints deadline_hours budget_usd max_gpus clouds gpus spot min_memory_headroom objective
rerun_factor allow_tp_across_nodes top pretrain full qlora fp32 fp16 bf16 fp8 adamw adamw8bit sgd none selective
optimizer_params swiglu geglu gelu rmsnorm layernorm rotary learned alibi time cost balanced allowed only
q_proj k_proj v_proj o_proj gate_proj up_proj down_proj true false yes no null ~ 1e15 1e308 -1 0 0x10 .inf .nan""".split()
HF_WORDS = """model_type llama mistral mixtral qwen2 qwen3 qwen3_moe deepseek_v2 deepseek_v3 gemma gemma2 gemma3_text gemma3
gpt2 gpt_neox text_config hidden_size intermediate_size num_hidden_layers num_attention_heads num_key_value_heads
vocab_size head_dim tie_word_embeddings attention_bias num_local_experts num_experts num_experts_per_tok
moe_intermediate_size n_routed_experts n_shared_experts first_k_dense_replace moe_layer_freq kv_lora_rank q_lora_rank
qk_nope_head_dim qk_rope_head_dim v_head_dim topk_method noaux_tc greedy decoder_sparse_step mlp_only_layers n_embd
n_head n_inner n_layer n_positions max_position_embeddings null true false 1e308 -1 0""".split()


def write_dict(name, words):
    d = os.path.join(ROOT, "fuzz", "dict")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        f.write("# libFuzzer dictionary (written by fuzz/seed_corpus.py)\n")
        for w in sorted(set(words)):
            if w == "<BOM>":  # a UTF-8 byte-order mark, in libFuzzer's escape
                f.write('"\\xEF\\xBB\\xBF"\n')
                continue
            f.write('"%s"\n' % w.replace("\\", "\\\\").replace('"', '\\"'))


def write_dicts(data):
    csv_words = ["unknown", "none", "yes", "no", "true", "false", "1e308", "-0", "0x10", "inf", "nan", "\"\"", "<BOM>"]
    for n in ["gpus", "links", "instances", "storage", "capacity_blocks"]:
        with open(os.path.join(data, n + ".csv"), newline="") as f:
            csv_words += next(csv.reader(f))
    with open(os.path.join(data, "calibration.csv"), newline="") as f:
        cal_words = ["key", "value", "unit", "source", "date", "notes", "1e308", "-1", "0", "nan"]
        cal_words += [r[0] for r in csv.reader(f)]
    with open(os.path.join(data, "efficiency.csv"), newline="") as f:
        cal_words += [r[0] for r in csv.reader(f)]
    val_words = list(csv_words)
    p = os.path.join(SHARED, "runs.csv")
    if os.path.exists(p):
        with open(p, newline="") as f:
            val_words += next(csv.reader(f))
    val_words += ["full", "selective", "bf16", "fp8", "FSDP", "ZeRO-3", "throughput_tokens_per_sec_per_gpu", "mfu",
                  "peak_memory_gib", "tokens/s/GPU", "h100_80gb", "a100_80gb"]
    write_dict("job.dict", JOB_WORDS)
    write_dict("hf_config.dict", HF_WORDS)
    write_dict("catalog.dict", csv_words)
    write_dict("calibration.dict", cal_words)
    write_dict("validation.dict", val_words)


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    ex = os.path.join(ROOT, "examples")
    for n in sorted(os.listdir(ex)):
        p = os.path.join(ex, n)
        if n.endswith(".yaml"):
            text = open(p).read()
            put("job", n, text)
            put("job", n[:-5] + ".json", json.dumps(yaml.safe_load(text), indent=2) + "\n")
        elif n.endswith(".csv"):
            put("catalog", n, open(p, "rb").read())
    put("job", "shape-moe.yaml", "model:\n  layers: 4\n  hidden: 512\n  heads: 8\n  kv_heads: 2\n  vocab: 32000\n"
        "  ffn_hidden: 1024\n  experts: 8\n  experts_per_token: 2\nparallel: {tp: 2, ep: 2}\n"
        "cluster: {gpu: h100, num_gpus: 8}\n")
    put("job", "params-lora.yaml", "model: {params: 7.5e9}\ntraining: {method: qlora, lora: {rank: 64, targets: [q_proj, v_proj]},"
        " samples: 10000, epochs: 3}\ncluster: {gpu: l4, num_gpus: 1, storage: aws-ebs-gp3, network: efa-v2}\n")
    hf = os.path.join(ROOT, "tests", "fixtures", "hf")
    for n in sorted(os.listdir(hf)):
        put("hf_config", n, open(os.path.join(hf, n), "rb").read())
    data = os.path.join(ROOT, "data")
    for n in ["gpus", "links", "instances", "storage", "capacity_blocks"]:
        put("catalog", n + ".csv", csv_subset(os.path.join(data, n + ".csv"), [1, 2, 3, 10, 20, 30]))
    for n in ["calibration", "efficiency"]:
        p = os.path.join(data, n + ".csv")
        put("calibration", n + ".csv", open(p, "rb").read())
        put("calibration", n + "-few.csv", csv_subset(p, [1, 5, 9]))
    for n, picks in [("runs.csv", [1, 2, 50, 200, 400, 800]), ("memory.csv", [1, 5, 10, 20]),
                     ("peft_runs.csv", [1, 100])]:
        p = os.path.join(SHARED, n)
        if os.path.exists(p):
            put("validation", n, csv_subset(p, picks))
    write_dicts(data)
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    assert total < 2 * 1024 * 1024, total
    print(f"fuzz/corpus: {total} bytes")


if __name__ == "__main__":
    sys.exit(main())
