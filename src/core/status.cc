#include "gpuplan/status.h"

namespace gpuplan {

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out;
  if (!loc_.file.empty()) {
    out += loc_.file;
    if (loc_.line > 0) out += ":" + std::to_string(loc_.line);
    out += ": ";
  }
  if (!loc_.key.empty()) out += loc_.key + ": ";
  out += reason_;
  return out;
}

}  // namespace gpuplan
