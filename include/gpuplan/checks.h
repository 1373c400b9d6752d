// Checks of real tool outputs against a plan or against the thresholds the clouds' own health checks
// use (data/checks.csv: every rule with its source, date and the troubleshooting row it leads to), and
// The validation checklist for a plan (docs/troubleshooting.md gathers its rows). docs/checks.md lists every check.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/estimate.h"
#include "gpuplan/launch.h"
#include "gpuplan/status.h"
#include "gpuplan/toolout.h"

namespace gpuplan {

// How a rule's threshold becomes the number a reading is compared with.
enum class CheckBasis {
  kAbsolute,          // threshold as it is, in the rule's unit
  kReference,         // threshold x the rule's reference (a vendor's measured number)
  kLineRate,          // threshold x the NIC line rate (plan link, ibstat, a perftest table, --line-rate-gbps)
  kPlanBusbw,         // threshold x the plan's modelled bus bandwidth for that collective, size and ranks
  kPlanNvlinkLinks,   // threshold x the plan GPU's NVLink bandwidth / the rule's reference (GB/s per link)
  kPlanNics,          // threshold x the plan's RDMA NICs per node
  kPlanStorageRead,   // threshold x the plan storage tier's read bandwidth
  kCap,               // threshold x the reading's own capability (cap_width, cap_gen)
};

// One row of data/checks.csv.
struct CheckRule {
  std::string id;
  std::string tool;        // ToString(ToolKind) of the outputs it reads ("*" = any)
  std::string metric;      // Reading::metric
  std::string scope;       // ";"-separated conditions: key=v1,v2 | key!=v | key>=n | key<=n | key~text; "" = always
  std::string op;          // >= <= == != contains !contains in none ("none": the reading itself is the finding)
  std::string threshold;   // number or text
  std::string unit;
  CheckBasis basis = CheckBasis::kAbsolute;
  std::optional<double> reference;
  std::string severity;    // fail | warn: what missing the threshold means
  std::string troubleshooting;  // the docs/troubleshooting.md section it leads to ("docs/troubleshooting.md#nccl-timeout")
  std::string next;        // what to do, with {measured} {expected} {unit} filled in
  std::string source, date;
  Location where;          // checks.csv:line
};

// data/checks.csv, or `path` instead when given (same header). Bad rows: BadInput at file:line: column.
Result<std::vector<CheckRule>> LoadCheckRules(const std::string& path = "");

// What the plan assumed, resolved from the catalog once.
struct PlanContext {
  LaunchPlan plan;
  HardwareContext hw;      // ResolveHardware of the plan's job
  std::optional<double> line_rate_gbit_per_s;  // the plan's inter-node link, per NIC
};
Result<PlanContext> MakePlanContext(const LaunchPlan& plan, const Catalog& catalog, const Calibration& cal);

// The plan a `--plan FILE` names: row `row` (1-based) of a PLAN.json from `gpuplan plan --json`
// (re-estimated by this build), a job file that pins cluster.num_gpus (estimated as it is), or
// else row `row` of the planner's table for that job file.
// `row_flag` names the flag that chose the row in errors ("--plan-row" for verify, "--plan" for checklist).
Result<LaunchPlan> LoadPlanFile(const std::string& path, int64_t row, const Catalog& catalog, const Calibration& cal,
                                const std::string& row_flag = "--plan-row");

struct VerifyOptions {
  std::vector<CheckRule> rules;                // Default: none (load with LoadCheckRules).
  std::optional<PlanContext> plan;             // Default: none = the thresholds of data/checks.csv only.
  std::optional<double> line_rate_gbit_per_s;  // Default: none (from the plan, an ibstat or a perftest table).
  const Catalog* catalog = nullptr;            // Default: none (GPU names in outputs are not resolved).
};

enum class Verdict { kPass, kWarn, kFail, kNotApplicable };
std::string ToString(Verdict v);  // pass | warn | fail | n/a

struct CheckResult {
  std::string id;                 // rule id ("" for a reading no rule applies to)
  Verdict verdict = Verdict::kNotApplicable;
  std::string tool, metric, unit;
  double measured = 0;
  std::string measured_text;      // for states ("NET/Socket")
  std::optional<double> expected; // the number compared with (threshold x basis), in `unit`
  std::string expected_from;      // how: "80% of 100 Gb/s (roce-100g, data/links.csv)"
  std::string message;            // one sentence with both numbers
  std::string next;               // what to do next (the rule's text with our numbers)
  std::string troubleshooting, source, date;
  Location where;                 // the reading's file:line
  Location rule;                  // the rule's checks.csv:line
};

struct VerifyReport {
  std::vector<ToolOutput> outputs;
  std::vector<CheckResult> results;
  std::vector<std::string> unrecognised;  // files whose kind was not recognised (named, never skipped)
  int passes = 0, warnings = 0, failures = 0, not_applicable = 0;
  // 1 when a file was not recognised, else 2 when a check failed, else 0.
  int ExitCode() const;
};

VerifyReport RunChecks(std::vector<ToolOutput> outputs, const VerifyOptions& options);

// All readings of the report, flat: what `verify --ledger` stores.
std::vector<Reading> VerifyReadings(const VerifyReport& report);

// ---- the validation checklist ----

struct ChecklistStep {
  std::string title;                   // "RDMA bandwidth per NIC (ib_write_bw)"
  std::vector<std::string> commands;   // exact command lines to run on the cluster
  std::string save_as;                 // the file to save the output to ("" = nothing to save)
  std::string expect;                  // the number it should reach, from the catalog and the plan
  std::string why;                     // the seed's reason / the source of the number
};

// The steps for one plan, in the order a rented cluster is checked (tiny job, topology, clocks, PCIe, RDMA,
// collectives, NCCL transport, storage, checkpoint, profiler), with commands for its nodes.
// `plan_file` is what the user passed (the export command of the first step names it).
Result<std::vector<ChecklistStep>> BuildChecklist(const PlanContext& plan, const Catalog& catalog, const std::vector<CheckRule>& rules,
                                                  const std::string& plan_file);

}  // namespace gpuplan
