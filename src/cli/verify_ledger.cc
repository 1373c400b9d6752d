#include "verify_ledger.h"

#include <nlohmann/json.hpp>

#include "gpuplan/csv.h"
#include "gpuplan/ledger.h"

namespace gpuplan::cli {

Result<int64_t> RecordVerifyReadings(const std::string& ledger_path, const std::string& machine, const std::string& pool,
                                     const std::vector<ToolOutput>& outputs) {
  auto ledger = Ledger::Open(ledger_path);
  if (!ledger.ok()) return ledger.status();
  int64_t n = 0;
  for (const auto& out : outputs) {
    if (out.kind == ToolKind::kUnknown || out.readings.empty()) continue;
    auto raw = ReadTextFile(out.file);
    if (!raw.ok()) return raw.status();
    MeasurementBatch batch;
    batch.machine = machine;
    batch.pool = pool;
    batch.tool = out.tool.empty() ? ToString(out.kind) : out.tool;
    batch.raw_sha256 = Sha256Hex(*raw);
    batch.raw_file = out.file;
    for (const auto& r : out.readings) {
      // Numbers as JSON numbers (ranks, nodes, msg_bytes, ...), so the ledger's readers (calibrate) can use them.
      nlohmann::json ctx = nlohmann::json::object();
      for (const auto& [k, v] : r.context) {
        auto num = ParseDecimal(v, {});
        if (num.ok()) ctx[k] = *num;
        else ctx[k] = v;
      }
      if (ctx.contains("msg_bytes")) ctx["bytes"] = ctx["msg_bytes"];  // the message size under calibrate's key too
      ctx["kind"] = ToString(r.kind);
      ctx["where"] = r.where.file + ":" + std::to_string(r.where.line);
      if (!r.text.empty()) ctx["text"] = r.text;
      batch.items.push_back({r.metric, r.value, r.unit, ctx.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
    }
    auto ids = (*ledger)->RecordMeasurements(batch);
    if (!ids.ok()) return ids.status();
    n += static_cast<int64_t>(ids->size());
  }
  return n;
}

}  // namespace gpuplan::cli
