#pragma once

#include <string>
#include <vector>

namespace gpuplan {
struct HtmlReportOptions;  // gpuplan/html_report.h
}  // namespace gpuplan

namespace gpuplan::cli {

// Each returns the process exit code (0 ok, 1 bad input, 2 infeasible / threshold not met, 3 internal).
int CmdMemory(const std::vector<std::string>& argv);
int CmdModels(const std::vector<std::string>& argv);
int CmdCatalog(const std::vector<std::string>& argv);
int CmdEstimate(const std::vector<std::string>& argv);
int CmdServing(const std::vector<std::string>& argv);
int CmdValidate(const std::vector<std::string>& argv);
int CmdPlan(const std::vector<std::string>& argv);
int CmdExport(const std::vector<std::string>& argv);
int CmdImport(const std::vector<std::string>& argv);
int CmdVerify(const std::vector<std::string>& argv);
int CmdChecklist(const std::vector<std::string>& argv);
int CmdProbe(const std::vector<std::string>& argv);
int CmdLedger(const std::vector<std::string>& argv);
int CmdDiagnose(const std::vector<std::string>& argv);
int CmdCalibrate(const std::vector<std::string>& argv);
int CmdFleet(const std::vector<std::string>& argv);
int CmdWeb(const std::vector<std::string>& argv);  // cmd_web.cc, in the binary only (it links the server)

struct Args;
struct Context;
// `serving --plan` (cmd_serving_plan.cc): the ranked setups, text or JSON (or the HTML report when `html` is
// given); exit 2 when none meets the SLA.
int RunServingPlan(const Context& ctx, bool json, const HtmlReportOptions* html = nullptr);
// export of a serving job (--serving, --to vllm|sglang|tensorrt-llm, or kubernetes for a job with serving.* keys).
bool IsServingExport(const Args& args);
int ExportServing(const Args& args, bool json);

// Prints a Status as "gpuplan: file:line: key: reason" and returns its exit code.
int Fail(const class Status& st);

}  // namespace gpuplan::cli
