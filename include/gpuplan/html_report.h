// `--format html`: one self-contained HTML file (inline CSS and SVG, no script, no network) for `plan`,
// `plan --pool`, `serving`, `serving --plan` and `fleet`, drawn from the same records the text and JSON
// printers take (docs/report-html.md). English or Chinese; every word comes from data/report_strings.csv.
#pragma once

#include <string>
#include <vector>

#include "gpuplan/fleet.h"
#include "gpuplan/pool.h"
#include "gpuplan/pool_plan.h"
#include "gpuplan/report.h"
#include "gpuplan/serving_plan.h"

namespace gpuplan {

enum class ReportLang { kEn, kZh };
// "en" | "zh"; anything else is bad input at `where`.
Result<ReportLang> ParseReportLang(const std::string& text, const Location& where);

// The report's words in one language (data/report_strings.csv: key,en,zh).
class ReportText {
 public:
  // Errors: the data file is malformed (a missing column, an empty cell, a key twice).
  static Result<ReportText> Load(ReportLang lang);
  // The word for `key`; "{0}", "{1}", ... replaced by `args`. A key the file lacks reads "[key]".
  std::string operator()(const std::string& key, const std::vector<std::string>& args = {}) const;
  ReportLang lang() const { return lang_; }
  const char* LangTag() const { return lang_ == ReportLang::kZh ? "zh" : "en"; }

 private:
  ReportLang lang_ = ReportLang::kEn;
  std::vector<std::pair<std::string, std::string>> words_;  // key, word (sorted by key)
};

struct HtmlReportOptions {
  ReportLang lang = ReportLang::kEn;  // Default: English.
};

// `plan`: the Pareto front of wall-clock vs cost (every ranked setup a point), the best setup's memory per
// GPU against its card, step time, wall-clock and cost, the setups and the rejections. `ctx.catalog` (and
// `ctx.cal`) resolve the best setup's card and its memory breakdown; without a catalog those are left out.
Result<std::string> PlanToHtml(const PlanResult& r, const Job& job, const PlanPrintContext& ctx,
                               const HtmlReportOptions& options = {});
// `plan --pool`: the ranked layouts and the best one's stages (card, GPUs, tp, dp, blocks, micro-batch
// time, memory against the card) as bars and a table, its step, idle cards and the rejections.
Result<std::string> PoolPlanToHtml(const Pool& pool, const PoolPlanResult& r, const Job& job,
                                   const HtmlReportOptions& options = {});
// `serving --plan`: TTFT and TPOT p90 against output tokens/s for every setup with the SLA lines, the cost
// per million output tokens, the table and the rejections.
Result<std::string> ServingPlanToHtml(const ServingPlanResult& r, const Job& job, const HtmlReportOptions& options = {});
// `serving`: one setup's memory per GPU at start-up, latency, throughput and cost.
Result<std::string> ServingToHtml(const ServingReport& r, const HtmlReportOptions& options = {});
// `fleet`: each job's cards, its time on the pool and its cost, the policy against the type-blind baseline.
Result<std::string> FleetToHtml(const Fleet& fleet, const FleetResult& r, bool simulated,
                                const HtmlReportOptions& options = {});

}  // namespace gpuplan
