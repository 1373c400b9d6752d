// `gpuplan verify --ledger PATH`: the readings of verify's outputs into the resource ledger (the one
// place the verify command touches SQLite, through gpuplan/ledger.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuplan/status.h"
#include "gpuplan/toolout.h"

namespace gpuplan::cli {

// One ledger batch per recognised output (one tool run): every reading as a measurement of `machine`
// (in `pool`, "" = the machine's own), with the raw output's SHA-256 and file name and the reading's
// context (numbers as JSON numbers; msg_bytes also as "bytes", the key `gpuplan calibrate` reads), text
// and file:line as its context JSON. Returns how many measurements were written.
Result<int64_t> RecordVerifyReadings(const std::string& ledger_path, const std::string& machine, const std::string& pool,
                                     const std::vector<ToolOutput>& outputs);

}  // namespace gpuplan::cli
