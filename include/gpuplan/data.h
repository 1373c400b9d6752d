// Catalog files from data/, compiled into the binary so it runs from anywhere.
#pragma once

#include <string>
#include <string_view>

namespace gpuplan {

// The text of data/<name> as it was at build time; empty if there is no such file.
std::string_view EmbeddedData(const std::string& name);

// 12 hex digits of a hash over src/model/*.cc and data/*.csv at build time.
const char* ModelFingerprint();

}  // namespace gpuplan
