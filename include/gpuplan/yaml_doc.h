// One YAML/JSON document read with the job file's guards (one document, no text after a flow document's end,
// bounded nesting and node count): the readers of pool and fleet files share them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "gpuplan/status.h"

namespace gpuplan {

Result<YAML::Node> LoadYamlDocument(const std::string& text, const std::string& file);
// file:line of a node (line 0 when yaml-cpp has no mark), with the key named.
Location YamlWhere(const std::string& file, const YAML::Node& n, const std::string& key);

}  // namespace gpuplan
