// gpuplan: one table of subcommands. Every number comes from the library.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli.h"
#include "commands.h"
#include "gpuplan/text_width.h"
#include "gpuplan/data.h"
#include "gpuplan/report.h"
#include "gpuplan/strings.h"

namespace {

struct Command {
  const char* name;
  const char* help;
  int (*run)(const std::vector<std::string>&);
};

const Command kCommands[] = {
    {"memory", "training memory per GPU, broken down; does it fit, and what would", gpuplan::cli::CmdMemory},
    {"estimate", "step time, throughput, MFU and time to train, with the bottleneck", gpuplan::cli::CmdEstimate},
    {"serving", "inference serving: KV-cache capacity, concurrency, TTFT/TPOT, throughput and cost per million tokens", gpuplan::cli::CmdServing},
    {"plan", "search cloud instances and layouts for the best whole setup", gpuplan::cli::CmdPlan},
    {"fleet", "assign a pool's cards to many jobs (training with deadlines, serving with SLAs) vs type-blind FCFS; simulate a trace; export to Slurm or Kueue", gpuplan::cli::CmdFleet},
    {"export", "write launch artefacts for a plan: deepspeed, accelerate, torchrun, megatron, torchtitan, slurm, kubernetes, skypilot, fabric", gpuplan::cli::CmdExport},
    {"import", "read ds_config.json / accelerate YAML / torchtitan TOML / Megatron or torchrun command lines into a job", gpuplan::cli::CmdImport},
    {"verify", "read nccl-tests/perftest/nvidia-smi/lspci/ibstat/fio/dcgmi/NCCL-log outputs: pass/warn/fail against the plan", gpuplan::cli::CmdVerify},
    {"checklist", "the validation list for a plan: commands to run on the cluster and the numbers to reach", gpuplan::cli::CmdChecklist},
    {"probe", "measure this machine (CPU, NUMA, RAM, disks, NICs, RDMA, PCIe, GPUs; --bench storage|cpu|gpu) into the ledger", gpuplan::cli::CmdProbe},
    {"ledger", "the resource ledger (SQLite): list | show | export | forget | import", gpuplan::cli::CmdLedger},
    {"calibrate", "turn a pool's measured numbers (ledger) into calibration overrides for --calibration", gpuplan::cli::CmdCalibrate},
    {"diagnose", "rank likely causes of a slow or failing job (symptoms, logs) with the model's numbers", gpuplan::cli::CmdDiagnose},
    {"validate", "predict published runs (runs.csv format) and report the error", gpuplan::cli::CmdValidate},
    {"models", "list the built-in model presets", gpuplan::cli::CmdModels},
    {"catalog", "list catalog rows: gpus | links | instances | storage", gpuplan::cli::CmdCatalog},
    {"web", "serve a local page and a JSON API of these commands (http://127.0.0.1:8600)", gpuplan::cli::CmdWeb},
};

void Usage(FILE* out) {
  std::fprintf(out, "gpuplan %s — plan GPU cloud setups for LLM training and serving\n\nusage: gpuplan COMMAND [JOB.yaml] [--flags]\n\ncommands:\n",
               gpuplan::kVersion);
  for (const auto& c : kCommands) {
    char line[512];
    std::snprintf(line, sizeof line, "  %-10s %s\n", c.name, c.help);
    std::fputs(gpuplan::FitWidth(line, gpuplan::kTextWidth, 13).c_str(), out);
  }
  std::fprintf(out, "\n'gpuplan COMMAND --help' lists a command's flags. Exit codes: 0 ok, 1 bad input, 2 infeasible, 3 internal.\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> all(argv + 1, argv + argc);
  try {
    if (argc < 2) {
      Usage(stderr);
      return 1;
    }
    const std::string name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
      Usage(stdout);
      return 0;
    }
    if (name == "--version" || name == "version") {
      std::printf("gpuplan %s (model fingerprint %s)\n", gpuplan::kVersion, gpuplan::ModelFingerprint());
      return 0;
    }
    std::vector<std::string> rest(argv + 2, argv + argc);
    for (const auto& c : kCommands)
      if (name == c.name) return c.run(rest);
    std::string best;
    size_t best_d = 3;
    for (const auto& c : kCommands)
      if (size_t d = gpuplan::EditDistance(name, c.name); d < best_d) best_d = d, best = c.name;
    const gpuplan::Status st = gpuplan::Status::BadInput(
        {"command line", 0, name}, "unknown command" + (best.empty() ? std::string() : " (did you mean '" + best + "'?)"));
    if (gpuplan::cli::WantsJson(rest)) return gpuplan::cli::Fail(st, true);
    std::fprintf(stderr, "gpuplan: %s\n", st.ToString().c_str());
    Usage(stderr);
    return 1;
  } catch (const std::exception& ex) {
    return gpuplan::cli::Fail(gpuplan::Status::Internal(std::string("internal error: ") + ex.what()),
                              gpuplan::cli::WantsJson(all));
  }
}
