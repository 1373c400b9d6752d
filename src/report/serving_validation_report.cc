// The serving validation report: headline bars, error by engine, GPU, scenario, source and
// metric (in-sample and leave-one-source-out), every row (text, Markdown, CSV from one record).
#include <cstdio>
#include <string>

#include "gpuplan/serving_validation.h"

namespace gpuplan {

namespace {

std::string Pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * x);
  return b;
}
std::string Num(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", x);
  return b;
}

const char* kFamilies[] = {"TPOT", "throughput", "TTFT", "TPOT p90", "TTFT p90", "latency"};
const char* kDimensions[] = {"engine", "GPU", "scenario", "source"};

// One table: group | n | median |error| | p90 | share over | median over | median under.
std::string Table(const std::vector<ServingErrorSummary>& rows, const std::string& head, bool md) {
  std::string s;
  if (md) {
    s += "| " + head + " | n | median \\|error\\| | p90 \\|error\\| | over-predicted | median over | median under |\n";
    s += "|---|---:|---:|---:|---:|---:|---:|\n";
  } else {
    char b[200];
    std::snprintf(b, sizeof b, "  %-34s %5s %9s %9s %7s %9s %9s\n", head.c_str(), "n", "median", "p90", "over", "med over",
                  "med under");
    s += b;
  }
  for (const auto& r : rows) {
    if (md) {
      s += "| " + r.group + " | " + std::to_string(r.n) + " | " + Pct(r.median_abs) + " | " + Pct(r.p90_abs) + " | " +
           Pct(r.sides.share_over) + " | " + Pct(r.sides.median_over) + " | " + Pct(r.sides.median_under) + " |\n";
    } else {
      char b[300];
      std::snprintf(b, sizeof b, "  %-34s %5d %9s %9s %7s %9s %9s\n", r.group.substr(0, 34).c_str(), r.n,
                    Pct(r.median_abs).c_str(), Pct(r.p90_abs).c_str(), Pct(r.sides.share_over).c_str(),
                    Pct(r.sides.median_over).c_str(), Pct(r.sides.median_under).c_str());
      s += b;
    }
  }
  return s;
}

std::string Headline(const ServingValidationReport& r, bool loso, bool md) {
  const ServingHeadline h = ServingHeadlines(r, loso);
  const std::string title = loso ? "leave-one-source-out" : "in-sample (constants in force)";
  std::string s = md ? "**" + title + "**\n\n" : "  " + title + "\n";
  s += Table({h.tpot, h.throughput, h.ttft_low}, "bar", md);
  return s;
}

std::string Body(const ServingValidationReport& r, bool md) {
  std::string s;
  char b[300];
  std::snprintf(b, sizeof b, "%d of %d rows predicted (%s); %zu numbers compared.\n", r.rows_predicted, r.rows_total,
                Pct(r.rows_total ? static_cast<double>(r.rows_predicted) / r.rows_total : 0).c_str(), r.compared.size());
  s += b;
  s += md ? "\nTargets (docs/model/serving.md): TPOT median <= 20%, throughput <= 25%, TTFT at concurrency <= 8 <= 30%, "
            ">= 70% of rows predicted.\n\n"
          : "Targets: TPOT median <= 20%, throughput <= 25%, TTFT at concurrency <= 8 <= 30%, >= 70% of rows predicted.\n";
  if (r.has_loso) s += Headline(r, true, md) + (md ? "\n" : "");
  s += Headline(r, false, md) + (md ? "\n" : "");
  for (bool loso : {true, false}) {
    if (loso && !r.has_loso) continue;
    for (const char* fam : kFamilies) {
      const auto all = SummarizeServing(r, fam, "all", loso);
      if (all.empty()) continue;
      const std::string title = std::string(fam) + (loso ? " (leave-one-source-out)" : " (in-sample)");
      s += md ? "#### " + title + "\n\n" : "\n" + title + "\n";
      for (const char* dim : kDimensions) s += Table(SummarizeServing(r, fam, dim, loso), dim, md) + (md ? "\n" : "");
    }
  }
  for (const auto& w : r.loso_warnings) s += (md ? "- " : "  warning: ") + w + "\n";
  return s;
}

}  // namespace

std::string ServingValidationToText(const ServingValidationReport& r, bool all_rows) {
  std::string s = "Serving: served runs predicted with gpuplan serving\n" + Body(r, false);
  s += "\nNot predicted:\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    if (r.row_reasons[i].empty()) continue;
    if (!all_rows) {
      s += "  " + r.rows[i].file.substr(r.rows[i].file.find_last_of('/') + 1) + ":" + std::to_string(r.rows[i].line) + " " +
           r.rows[i].id + ": " + r.row_reasons[i] + "\n";
    }
  }
  if (all_rows) {
    s += "\nEvery compared number:\n";
    for (const auto& c : r.compared) {
      const ServingRunRow& row = r.rows[c.row];
      s += "  " + row.id + " " + row.job.serving.engine + " " + row.job.cluster.gpu + " " + ToString(row.scenario) + " " +
           c.metric + " measured " + Num(c.measured) + " predicted " + Num(c.predicted) + " error " + Pct(c.error) +
           (c.loso ? " loso " + Pct(c.loso_error) : "") + "\n";
    }
  }
  return s;
}

std::string ServingValidationToMarkdown(const ServingValidationReport& r, const std::string& inputs) {
  std::string s = "## Serving\n\nServed runs (" + inputs +
                  ") predicted with `gpuplan serving`: each row's model, weights, GPU, tp/pp/dp, lengths and load "
                  "(fixed concurrency, a burst of requests at t=0, offline, or a request rate), each measure in its "
                  "source's own meaning (docs/validation-rows.md \"Serving: how rows are read\").\n\n";
  s += Body(r, true);
  s += "\n#### Rows not predicted\n\n| file:line | id | reason |\n|---|---|---|\n";
  for (size_t i = 0; i < r.rows.size(); ++i)
    if (!r.row_reasons[i].empty())
      s += "| " + r.rows[i].file.substr(r.rows[i].file.find_last_of('/') + 1) + ":" + std::to_string(r.rows[i].line) +
           " | " + r.rows[i].id + " | " + r.row_reasons[i] + " |\n";
  return s;
}

std::string ServingComparedToCsv(const ServingValidationReport& r) {
  std::string s = "id,fold,engine,gpu,scenario,low_concurrency,family,metric,measured,predicted,error,loso_error\n";
  for (const auto& c : r.compared) {
    const ServingRunRow& row = r.rows[c.row];
    const bool low = row.scenario == ServingScenario::kConcurrency && row.job.serving.concurrency <= kLowConcurrency;
    std::string fold = row.fold;
    for (char& ch : fold)
      if (ch == ',') ch = ';';
    s += row.id + "," + fold + "," + row.job.serving.engine + "," + row.job.cluster.gpu + "," + ToString(row.scenario) + "," +
         (low ? "yes" : "no") + "," + c.family + "," + c.metric + "," + Num(c.measured) + "," + Num(c.predicted) + "," +
         Num(c.error) + "," + (c.loso ? Num(c.loso_error) : "") + "\n";
  }
  return s;
}

}  // namespace gpuplan
