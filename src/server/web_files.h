// The files of web/ compiled into the binary (cmake/embed_web.cmake): nothing is read from disk at run time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuplan::server {

struct WebFile {
  std::string_view path;          // "/index.html", "/app.js": web/'s relative path with a leading '/'
  std::string_view content_type;  // from the extension: text/html; charset=utf-8, ...
  std::string_view content;
};

const std::vector<WebFile>& WebFiles();

// The file a GET path names exactly ("/" is /index.html), or nullptr: nothing else is served.
const WebFile* FindWebFile(const std::string& path);

}  // namespace gpuplan::server
