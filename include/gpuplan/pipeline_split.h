// Pipeline stages of uneven size (parallel.layer_split) as each engine takes them: data/pipeline_splits.csv,
// read from the engines' source (docs/export.md "Uneven pipeline stages"). `gpuplan export` writes a split
// only in a form the named engine (and release) runs exactly, and refuses it otherwise, naming one that can.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuplan/status.h"

namespace gpuplan {

// One way an engine takes (or does not take) a per-stage split: a row of data/pipeline_splits.csv.
struct SplitForm {
  std::string engine;       // the export format: megatron | torchtitan | deepspeed | ...
  std::string form;         // first_last | layout | fqn_lists | ...: what the exporter writes
  std::string keys;         // the engine's options, space-separated
  std::string min_version;  // the first release that has them ("" = every release)
  std::string splits;       // any | first_last (middle stages equal) | none (cannot) | other (a fact, not used)
  std::string source, commit, date, notes;
  Location where;           // data/pipeline_splits.csv:line
};

Result<std::vector<SplitForm>> ParsePipelineSplits(const std::string& csv_text, const std::string& file);
// The built-in table (data/pipeline_splits.csv); empty when a row is bad (its test fails then).
const std::vector<SplitForm>& PipelineSplits();

// No split, or every stage the same number of blocks: the engines' default even split, nothing to write.
bool EvenLayerSplit(const std::vector<int64_t>& split);
// Only the first and/or the last stage differ: the stages between (pp >= 3) hold the same number of blocks.
bool FirstLastLayerSplit(const std::vector<int64_t>& split);
// "11,11,4,4"
std::string LayerSplitText(const std::vector<int64_t>& split);

// A release as "0.13", "0.13.0", "core_v0.13.0", "core_r0.13.0" or "v0.2.2": {major, minor, patch}; false
// when the text is none of these.
bool ParseRelease(const std::string& text, int64_t out[3]);

// How `engine` at `version` ("" = the release its export pins, which has every form of the table) writes
// `split`: the form, or nullptr when the split is even or the engine has no row (the engine's own layout
// checks decide then); `refusal` is set when the engine has rows and none expresses the split:
// "<engine> cannot express uneven pipeline stages (parallel.layer_split 11,4): <why>; use <what can>".
struct SplitChoice {
  const SplitForm* form = nullptr;
  std::string refusal;
};
SplitChoice ChooseSplitForm(const std::string& engine, const std::string& version, const std::vector<int64_t>& split);

// Megatron's --pipeline-model-parallel-layout: the embedding on the first stage, the loss on the last,
// "Et*11|t*11|t*4|t*4L"; `expanded` writes every block out ("Ettt|tL"), a word with no '*' to glob.
std::string MegatronLayout(const std::vector<int64_t>& split, bool expanded);

}  // namespace gpuplan
