// PLACEHOLDER (issue 11, being written).
namespace gpuplan {}
