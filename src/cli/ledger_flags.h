// --ledger PATH [--pool NAME] on estimate and plan: the pool's measured numbers (calibrate's
// overrides, docs/calibrate.md) applied to the context's calibration, and said in the output.
#pragma once

#include <string>
#include <vector>

#include "cli.h"
#include "gpuplan/calibrate.h"

namespace gpuplan::cli {

std::vector<FlagSpec> LedgerFlags();
// No --ledger: nothing. Else the overrides of the pool for ctx.job (a job that finalizes: the
// pool's GPU and network) applied to ctx.cal; `applied` lists them.
Status ApplyLedger(const Args& args, Context& ctx, std::vector<CalibrationOverride>& applied);
// Text lines naming which numbers are measured (and from where) and that the rest are the catalog's.
std::string LedgerText(const Args& args, const std::vector<CalibrationOverride>& applied);
nlohmann::json LedgerJson(const Args& args, const std::vector<CalibrationOverride>& applied);

}  // namespace gpuplan::cli
