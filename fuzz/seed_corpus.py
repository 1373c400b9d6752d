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


# The newer commands' readers (issue 17): verify's tool outputs and the ledger's CSV are written here
# in the tools' shapes (not copies of users' pastes); import takes tests/fixtures/import with the byte
# that picks its file name (0 .json, 1 .yaml, 2 .toml, 3 .sh); plan_json takes gpuplan's own PLAN.json goldens.
VERIFY_SEEDS = {'fio.json': '{"fio version": "fio-3.33", "jobs": [{"jobname": "seqread", "read": {"bw": 2048000, "bw_bytes": 2097152000, "iops": 16000.0,\n"clat_ns": {"mean": 1000000.0}}, "write": {"bw": 0, "iops": 0}}]}\n', 'ib_write_bw.txt': '---------------------------------------------------------------------------------------\n                    RDMA_Write BW Test\n Dual-port       : OFF\t\tDevice         : mlx5_0\n Link type       : IB\n---------------------------------------------------------------------------------------\n #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536      5000             392.10             391.88\t\t   0.747445\n---------------------------------------------------------------------------------------\n', 'ibstat.txt': "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400\n\t\tLink layer: InfiniBand\nCA 'mlx5_1'\n\tPort 1:\n\t\tState: Down\n\t\tPhysical state: Disabled\n\t\tRate: 40\n\t\tLink layer: Ethernet\n", 'lspci.txt': '18:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:2330] (rev a1)\n\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n', 'nccl-allreduce.txt': '# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n#  Rank  0 Group  0 Pid  1001 on     node-a device  0 [0x18] NVIDIA H100 80GB HBM3\n#  Rank  1 Group  0 Pid  1001 on     node-a device  1 [0x2a] NVIDIA H100 80GB HBM3\n#\n#                                                              out-of-place                       in-place\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n     1048576        262144     float     sum      -1    40.11   26.14   45.75      0    39.80   26.35   46.11      0\n  8589934592    2147483648     float     sum      -1  36512.2  235.26  411.71      0  36480.1  235.47  412.07      0\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 228.9\n', 'nccl-debug.txt': 'node-a:1001:1001 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\nnode-a:1001:1050 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\nnode-b:2001:2050 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/Socket/0\nnode-a:1001:1050 [0] NCCL WARN NET/IB : Got completion from peer with error 12\n', 'nccl-noheader-rank.txt': '[1,0]<stdout>:   134217728      33554432     float     sum      -1   1234.5  108.72  190.26      0   1230.1  109.11  190.95      0\n[1,0]<stdout>:   268435456      67108864     float     sum      -1   2345.6  114.44  200.28      0   2340.2  114.71  200.74      0\n', 'smi-query.csv': 'index, name, memory.total [MiB], clocks.max.sm [MHz]\n0, NVIDIA H100 80GB HBM3, 81559 MiB, 1980 MHz\n1, NVIDIA H100 80GB HBM3, abc MiB, 1e308 MHz\n', 'topo.txt': '\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV18\tPXB\t0-47\t0\nGPU1\tNV18\t X \tPXB\t0-47\t0\nNIC0\tPXB\tPXB\t X \t\t\n\nLegend:\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n'}
LEDGER_SEEDS = {'busbw.csv': 'id,machine,pool,kind,value,unit,tool,raw_sha256,raw_file,time_utc,version,context_json\n1,node-a,h100,busbw_peak_gb_per_s,411.7,GB/s,all_reduce_perf,,ar.txt,2026-01-05T10:00:00Z,0.9.0,"{""op"":""all_reduce"",""ranks"":16,""nodes"":2,""msg_bytes"":8589934592}"\n', 'mixed.csv': 'id,machine,pool,kind,value,unit,tool,raw_sha256,raw_file,time_utc,version,context_json\n1,node-a,h100,gemm_tflops,650,TFLOPS,gemm,,,2026-01-05,,"{""m"":8192,""n"":8192,""k"":8192}"\n2,node-a,h100,tokens_per_s,120000,tokens/s,train,,,2026-01-05,,"{}"\n3,node-b,h100,storage_seq_write_mb_per_s,2500,MB/s,fio,,,2026-01-06,,\n', 'zero-ranks.csv': 'id,machine,pool,kind,value,unit,tool,raw_sha256,raw_file,time_utc,version,context_json\n1,node-a,h100,busbw_gb_per_s,100,GB/s,all_reduce_perf,,,2026-01-05,,"{""ranks"":0,""nodes"":0}"\n'}
PLAN_JSON_SEEDS = {'edited-schema.json': '{"schema": 999, "plans": [{"job": {"model.preset": "llama-2-7b", "cluster.gpu": "h100-sxm-80gb", "cluster.num_gpus": "8"}, "time_s": 1e308, "cost_usd": -5}]}\n', 'minimal.json': '{"schema": 1, "plans": [{"job": {"model.preset": "llama-2-7b", "training.tokens": "1e9", "cluster.gpu": "h100-sxm-80gb", "cluster.num_gpus": "8", "cluster.gpus_per_node": "8"}, "instance": null, "time_s": 3600, "step_time_s": 1.5, "cost_usd": 98.5}]}\n'}


def newer_readers():
    for name, text in VERIFY_SEEDS.items():
        put("verify", name, text)
    for name, text in LEDGER_SEEDS.items():
        put("ledger", name, text)
    for name, text in PLAN_JSON_SEEDS.items():
        put("plan_json", name, text)
    golden = os.path.join(ROOT, "tests", "golden")
    for n in sorted(os.listdir(golden)):
        path = os.path.join(golden, n)
        if n.startswith("plan") and "json" in n and os.path.getsize(path) < 60000:
            put("plan_json", n, open(path, "rb").read())
    fixtures = os.path.join(ROOT, "tests", "fixtures", "import")
    for n in sorted(os.listdir(fixtures)):
        path = os.path.join(fixtures, n)
        if not os.path.isfile(path) or os.path.getsize(path) >= 60000:
            continue
        k = 0 if n.endswith(".json") else 1 if n.endswith((".yaml", ".yml")) else 2 if n.endswith(".toml") else 3
        put("import", n, bytes([48 + k]) + open(path, "rb").read())


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
    newer_readers()
    write_dicts(data)
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    assert total < 2 * 1024 * 1024, total
    print(f"fuzz/corpus: {total} bytes")


if __name__ == "__main__":
    sys.exit(main())
