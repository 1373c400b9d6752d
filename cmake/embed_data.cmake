# Writes OUT: a C++ file that returns the text of each data file by name.
# Usage: cmake -DOUT=... -DFILES="a.csv;b.csv" -DDATA_DIR=... -P embed_data.cmake
set(body "#include \"gpuplan/data.h\"\nnamespace gpuplan {\nstd::string_view EmbeddedData(const std::string& name) {\n")
foreach(f ${FILES})
  file(READ "${DATA_DIR}/${f}" content)
  set(body "${body}  if (name == \"${f}\") {\n    static const char kText[] = R\"gpuplan_data(${content})gpuplan_data\";\n    return std::string_view(kText, sizeof(kText) - 1);\n  }\n")
endforeach()
set(body "${body}  return {};\n}\n")
# A fingerprint of the formulas and the data, so reports say exactly what produced them.
set(all "")
foreach(f ${FINGERPRINT_FILES})
  file(SHA256 "${f}" h)
  string(APPEND all "${h}")
endforeach()
string(SHA256 fp "${all}")
string(SUBSTRING "${fp}" 0 12 fp)
set(body "${body}const char* ModelFingerprint() { return \"${fp}\"; }\n}  // namespace gpuplan\n")
file(WRITE "${OUT}.tmp" "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
