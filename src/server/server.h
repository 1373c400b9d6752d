// `gpuplan web`: the page in web/ (embedded at build time) and the JSON API of src/server/api.h over HTTP
// (cpp-httplib). docs/web.md describes the routes, the limits and the safety rules.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gpuplan/status.h"
#include "server/api.h"

namespace gpuplan::server {

inline constexpr const char* kDefaultHost = "127.0.0.1";
inline constexpr int kDefaultPort = 8600;
// Request threads: each keep-alive connection holds one while it is open (the load test opens 10).
inline constexpr int kDefaultRequestThreads = 16;
// Requests one keep-alive connection may carry before the server closes it (cpp-httplib's default is 5).
inline constexpr size_t kKeepAliveMaxRequests = 1000;
// Plan-like searches run at once (each on 2 threads); more wait for a free slot.
inline constexpr int kDefaultConcurrentSearches = 2;
// A streamed search reports progress this often (milliseconds).
inline constexpr int kProgressIntervalMs = 200;

struct ServerOptions {
  std::string host = kDefaultHost;          // Default: 127.0.0.1 (loopback only)
  int port = kDefaultPort;                  // Default: 8600; 0 = any free port (port() says which)
  int64_t max_plan_items = kDefaultMaxPlanItems;  // Default: kDefaultMaxPlanItems; 0 = no limit
  int request_threads = kDefaultRequestThreads;   // Default: kDefaultRequestThreads
  int concurrent_searches = kDefaultConcurrentSearches;  // Default: kDefaultConcurrentSearches
};

// Whether a host is a loopback address (127.0.0.0/8, ::1, localhost): any other address is reachable from the
// network, and `gpuplan web` warns.
bool IsLoopbackHost(const std::string& host);

class WebServer {
 public:
  explicit WebServer(ServerOptions options);
  ~WebServer();
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  // Binds the socket (an error names the host and port); port() is then the port bound.
  Status Bind();
  int port() const;
  // Serves until Stop() (from any thread). Returns false when it could not listen.
  bool Run();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuplan::server
