// Ledger rows as `gpuplan ledger import` reads them (the export's CSV: kind, value, unit, time,
// context JSON ...): ImportCsv into a scratch ledger, read the rows back, then calibrate a reference
// job from them (the context JSON of each row is parsed there). Every value read back and every
// override must be finite; a 100k-deep context or a 1e308 value is bad input, never a crash or an inf.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "gpuplan/calibrate.h"
#include "gpuplan/ledger.h"

namespace {
const gpuplan::Job& ReferenceJob() {
  static const gpuplan::Job job = [] {
    auto j = gpuplan::ParseJobText(
        "model: {preset: llama-2-7b}\n"
        "training: {seq_len: 4096, global_batch: 64, tokens: 1.0e9}\n"
        "cluster: {gpu: h100-sxm-80gb, num_gpus: 16, gpus_per_node: 8}\n",
        "reference.yaml");
    if (!j.ok()) gpuplan::fuzz::Die("reference job: " + j.status().ToString());
    gpuplan::Job f = *j;
    if (auto st = gpuplan::FinalizeJob(f); !st.ok()) gpuplan::fuzz::Die("reference job: " + st.ToString());
    return f;
  }();
  return job;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuplan;
  static fuzz::ScratchFile csv("-ledger.csv");
  static fuzz::ScratchFile db("-ledger.db");
  static std::unique_ptr<Ledger> ledger = [] {
    auto l = Ledger::Open(db.Write(nullptr, 0));
    if (!l.ok()) fuzz::Die("scratch ledger: " + l.status().ToString());
    return std::move(l).value();
  }();
  static const Calibration cal = [] {
    auto c = Calibration::Load("");
    if (!c.ok()) fuzz::Die("built-in calibration: " + c.status().ToString());
    return *c;
  }();
  return fuzz::Guard([&] {
    ForgetSpec all;
    all.before_utc = "9999-12-31T00:00:00Z";
    fuzz::CheckStatus(ledger->Forget(all).status(), "Ledger::Forget");
    auto n = ledger->ImportCsv(csv.Write(data, size), 0, nullptr);
    fuzz::CheckStatus(n.status(), "Ledger::ImportCsv");
    if (!n.ok()) return;
    auto rows = ledger->Measurements({});
    fuzz::CheckStatus(rows.status(), "Ledger::Measurements");
    if (!rows.ok()) return;
    for (const auto& m : *rows) fuzz::Finite(m.value, "ledger value " + m.kind);
    auto stats = ledger->Stats({});
    fuzz::CheckStatus(stats.status(), "Ledger::Stats");
    if (stats.ok())
      for (const auto& k : *stats) fuzz::Finite(k.median, "median " + k.kind);
    auto r = CalibrateFromMeasurements(ReferenceJob(), fuzz::BuiltinCatalog(), cal, *rows);
    fuzz::CheckStatus(r.status(), "CalibrateFromMeasurements");
    if (!r.ok()) return;
    for (const auto& o : r->overrides) fuzz::Finite(o.value, "override " + o.key);
  });
}
