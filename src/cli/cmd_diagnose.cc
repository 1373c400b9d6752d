// gpuplan diagnose JOB.yaml [--symptom S]... [--gpu-util N --cpu-util N] [--log TRAIN.log] [FILE...]:
// likely causes, ranked, with the model's numbers and the check that confirms each.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cli.h"
#include "commands.h"
#include "gpuplan/diagnose.h"
#include "gpuplan/input_file.h"
#include "gpuplan/strings.h"
#include "gpuplan/toolout.h"

namespace gpuplan::cli {

namespace {

const std::vector<FlagSpec>& DiagnoseFlags() {
  static const std::vector<FlagSpec> flags = [] {
    std::vector<FlagSpec> f = JobCommandFlags();
    f.push_back({"symptom", true, "oom|nccl-timeout|slow-multinode|slow-checkpoint|loss-nan; repeatable"});
    f.push_back({"gpu-util", true, "GPU utilisation seen, percent (nvidia-smi)"});
    f.push_back({"cpu-util", true, "host CPU utilisation seen, percent"});
    f.push_back({"tokens-per-s", true, "measured tokens/s of the whole job"});
    f.push_back({"log", true, "a training log with tokens/s lines (the median is used); repeatable"});
    f.push_back({"host-cores-per-gpu", true, "host vCPUs per GPU"});
    f.push_back({"loader-tokens-per-s-per-core", true, "the data pipeline's tokens/s on one core (gpuplan probe --bench cpu)"});
    f.push_back({"checkpoint-s", true, "measured seconds of one checkpoint save"});
    f.push_back({"nccl-transport", true, "the transport a NCCL_DEBUG=INFO log shows: NET/IB, NET/IB/GDRDMA, NET/Socket, P2P"});
    f.push_back({"file", true, "a NCCL_DEBUG=INFO log (its transport is read) or a training log (its tokens/s); recognised by content; repeatable"});
    return f;
  }();
  return flags;
}

Location Flag(const std::string& n) { return {"command line", 0, "--" + n}; }

Status Number(const Args& a, const std::string& name, double lo, double hi, std::optional<double>& out) {
  if (!a.Has(name)) return Status::Ok();
  auto v = ParseDecimal(a.Get(name), Flag(name));
  if (!v.ok()) return v.status();
  if (!(*v >= lo && *v <= hi)) return Status::BadInput(Flag(name), "must be in " + FormatNumber("%g", lo) + ".." + FormatNumber("%g", hi));
  out = *v;
  return Status::Ok();
}

// The median tokens/s of a log (ReadTokensPerSecond: numbers read whole, rates out of range and
// huge lines are warnings at their line); the warnings go to stderr as file:line: key: reason.
Result<LogRate> LogTokensPerSecond(const std::string& text, const std::string& path) {
  auto rate = ReadTokensPerSecond(text, path);
  if (!rate.ok()) return rate;
  for (const auto& [at, why] : rate->warnings)
    std::fprintf(stderr, "%s:%d: %s: warning: %s\n", at.file.c_str(), at.line, at.key.c_str(), why.c_str());
  return rate;
}

Result<Observations> ReadObservations(const Args& a) {
  Observations o;
  GPUPLAN_RETURN_IF_ERROR(Number(a, "gpu-util", 0, 100, o.gpu_util_pct));
  GPUPLAN_RETURN_IF_ERROR(Number(a, "cpu-util", 0, 100, o.cpu_util_pct));
  GPUPLAN_RETURN_IF_ERROR(Number(a, "tokens-per-s", 1e-6, 1e15, o.tokens_per_s));
  if (o.tokens_per_s) o.tokens_per_s_from = Flag("tokens-per-s");
  GPUPLAN_RETURN_IF_ERROR(Number(a, "host-cores-per-gpu", 0.1, 4096, o.host_cores_per_gpu));
  GPUPLAN_RETURN_IF_ERROR(Number(a, "loader-tokens-per-s-per-core", 1e-6, 1e15, o.loader_tokens_per_s_per_core));
  GPUPLAN_RETURN_IF_ERROR(Number(a, "checkpoint-s", 1e-6, 1e9, o.checkpoint_s));
  if (a.Has("nccl-transport")) {
    o.nccl_transport = a.Get("nccl-transport");
    o.nccl_transport_from = Flag("nccl-transport");
  }
  if (auto it = a.flags.find("symptom"); it != a.flags.end())
    for (const auto& s : it->second) {
      auto sym = ParseSymptom(s);
      if (!sym) {
        std::string names;
        for (const auto& n : SymptomNames()) names += (names.empty() ? "" : ", ") + n;
        return Status::BadInput(Flag("symptom"), "unknown symptom '" + s + "' (expected " + names + ")");
      }
      o.symptoms.push_back(*sym);
    }
  // --file: a NCCL log gives the transport (NET/Socket anywhere wins: one rank without RDMA is
  // enough to slow the ring); anything else is read as a training log.
  if (auto it = a.flags.find("file"); it != a.flags.end())
    for (const auto& path : it->second) {
      auto out = ReadToolOutput(path);
      if (!out.ok()) return out.status();
      if (out->kind == ToolKind::kUnknown) {
        auto text = ReadInputFile(path);
        if (!text.ok()) return text.status();
        auto rate = LogTokensPerSecond(*text, path);
        if (!rate.ok() && rate.status().location().line > 0) return rate.status();
        if (!rate.ok())
          return Status::BadInput({"command line", 0, "--file"}, "'" + path + "' is neither a tool output gpuplan reads nor a training log with tokens/s lines");
        if (o.tokens_per_s)
          return Status::BadInput({"command line", 0, "--file"}, "'" + path + "' is a second measured tokens/s (give one of --tokens-per-s, --log, --file)");
        o.tokens_per_s = rate->tokens_per_s;
        o.tokens_per_s_from = rate->where;
        continue;
      }
      for (const auto& r : out->readings) {
        auto ctx = [&](const char* k) { auto it = r.context.find(k); return it == r.context.end() ? std::string() : it->second; };
        if (r.metric == "busbw_peak_gb_per_s") {
          Observations::BusBw b;
          b.gb_per_s = r.value;
          if (!ctx("op").empty()) b.op = ctx("op");
          // Counts as the output printed them: out of range (0 ranks, 1e30 nodes) they are not known.
          auto count = [&](const char* k, double hi) -> int64_t {
            const double v = std::atof(ctx(k).c_str());
            return v >= 1 && v <= hi && v == std::floor(v) ? static_cast<int64_t>(v) : 0;
          };
          b.ranks = count("ranks", 1 << 24);
          b.nodes = b.ranks > 0 ? count("nodes", static_cast<double>(b.ranks)) : 0;
          b.bytes = std::atof(ctx("msg_bytes").c_str());
          if (!(b.bytes > 0 && b.bytes < 1e15)) b.bytes = 0;
          if (!std::isfinite(b.gb_per_s) || b.gb_per_s < 0) continue;
          b.where = r.where;
          o.busbw = b;
        }
        if (r.metric == "throttle_thermal_or_hw_active" && r.value > 0) {
          if (o.throttled_gpus == 0) o.throttled_from = r.where;
          ++o.throttled_gpus;
        }
        if (r.metric == "ib_completion_error" && !o.ib_completion_error) o.ib_completion_error = r.where;
        if (r.metric != "transport") continue;
        const bool socket = r.text.find("Socket") != std::string::npos;
        if (!o.nccl_transport || (socket && o.nccl_transport->find("Socket") == std::string::npos)) {
          o.nccl_transport = r.text;
          o.nccl_transport_from = r.where;
        }
      }
    }
  if (auto it = a.flags.find("log"); it != a.flags.end()) {
    if (o.tokens_per_s) return Status::BadInput(Flag("log"), "give --tokens-per-s or --log, not both");
    for (const auto& path : it->second) {
      auto text = ReadInputFile(path);
      if (!text.ok()) return text.status();
      auto rate = LogTokensPerSecond(*text, path);
      if (!rate.ok() && rate.status().location().line > 0) return rate.status();
      if (!rate.ok()) return Status::BadInput({"command line", 0, "--log"}, "'" + path + "': " + rate.status().reason());
      o.tokens_per_s = rate->tokens_per_s;
      o.tokens_per_s_from = rate->where;
    }
  }
  return o;
}

}  // namespace

int CmdDiagnose(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, DiagnoseFlags(), true);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan diagnose JOB.yaml [--symptom S]... [--gpu-util N --cpu-util N] [--tokens-per-s X | --log FILE]\n\n"
                "Ranks likely causes (docs/troubleshooting.md, with the model's numbers) and the check that confirms each.\n\n%s",
                FlagHelp(DiagnoseFlags(), true, false).c_str());
    return 0;
  }
  if (Status st = RefusePlanFlags(*args, "diagnose"); !st.ok()) return Fail(st, json);
  auto obs = ReadObservations(*args);
  if (!obs.ok()) return Fail(obs.status(), json);
  auto ctx = LoadContext(*args);
  if (!ctx.ok()) return Fail(ctx.status(), json);
  auto d = Diagnose(ctx->job, ctx->catalog, ctx->cal, *obs);
  if (!d.ok()) return Fail(d.status(), json);
  if (json) {
    nlohmann::json causes = nlohmann::json::array();
    for (const auto& c : d->causes)
      causes.push_back({{"id", c.id}, {"title", c.title}, {"score", c.score}, {"evidence", c.evidence}, {"confirm", c.confirm},
                        {"fix", c.fix}, {"source", c.source}});
    nlohmann::json j = {{"expected_tokens_per_s", d->expected_tokens_per_s}, {"expected_step_time_s", d->expected_step_s},
                        {"measured_tokens_per_s", obs->tokens_per_s ? nlohmann::json(*obs->tokens_per_s) : nlohmann::json(nullptr)},
                        {"measured_over_expected", d->measured_over_expected ? nlohmann::json(*d->measured_over_expected) : nlohmann::json(nullptr)},
                        {"band_p90", d->band_p90 ? nlohmann::json(*d->band_p90) : nlohmann::json(nullptr)},
                        {"causes", causes}};
    EmitJson(j);
    return 0;
  }
  std::string out;
  Appendf(&out, "expected %s tokens/s (step %s s)", WithThousands(static_cast<int64_t>(d->expected_tokens_per_s)).c_str(),
              FormatNumber("%.3f", d->expected_step_s).c_str());
  if (obs->tokens_per_s) {
    const Location& w = obs->tokens_per_s_from;
    Appendf(&out, "; measured %s tokens/s (%s%s), %s%% of expected", WithThousands(static_cast<int64_t>(*obs->tokens_per_s)).c_str(), w.file.c_str(),
                w.line ? (":" + std::to_string(w.line)).c_str() : (" " + w.key).c_str(),
                FormatNumber("%.0f", 100 * *d->measured_over_expected).c_str());
  }
  Appendf(&out, "\n");
  if (d->causes.empty()) {
    Appendf(&out, "no cause stands out: give what you saw (--symptom, --gpu-util/--cpu-util, --tokens-per-s or --log)\n");
    PrintFitted(out);
    return 0;
  }
  int n = 0;
  for (const auto& c : d->causes) {
    Appendf(&out, "\n%d. %s  [%s, score %.2f]\n   evidence: %s\n   confirm:  %s\n   fix:      %s\n   source:   %s\n", ++n, c.title.c_str(),
                c.id.c_str(), c.score, c.evidence.c_str(), c.confirm.c_str(), c.fix.c_str(), c.source.c_str());
  }
  PrintFitted(out);
  return 0;
}

}  // namespace gpuplan::cli
