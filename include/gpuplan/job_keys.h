// The one table of job keys: each dotted key, its CLI flag and help. Job files and flags share it.
#pragma once

#include <string>
#include <vector>

namespace gpuplan {

struct JobKey {
  std::string key;    // dotted key in the job file, e.g. "training.seq_len"
  std::string flag;   // CLI flag without dashes, e.g. "seq-len"
  std::string help;   // one line, with the default
};

const std::vector<JobKey>& JobKeys();
const JobKey* FindJobKeyByFlag(const std::string& flag);
const JobKey* FindJobKey(const std::string& key);

}  // namespace gpuplan
