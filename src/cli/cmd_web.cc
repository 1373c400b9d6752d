// `gpuplan web [--port 8600] [--host 127.0.0.1]`: the page and the JSON API (src/server/, docs/web.md) until
// SIGINT or SIGTERM.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "cli.h"
#include "commands.h"
#include "server/server.h"

namespace gpuplan::cli {

namespace {

const std::vector<FlagSpec>& WebFlags() {
  static const std::vector<FlagSpec> flags = {
      {"port", true, "TCP port (default 8600; 0 = any free port, printed)"},
      {"host", true, "address to listen on (default 127.0.0.1; any other address is reachable from the network: a warning)"},
      {"max-plan-candidates", true,
       "the most work items (instance type x node count x variant) a non-streamed plan search may cover; larger ones "
       "are refused with 422 unless streamed (default " + std::to_string(server::kDefaultMaxPlanItems) + "; 0 = no limit)"},
      {"threads", true, "request threads (default " + std::to_string(server::kDefaultRequestThreads) + ")"},
      {"searches", true, "plan-like searches run at once; more wait (default " + std::to_string(server::kDefaultConcurrentSearches) + ")"},
      {"help", false, "this help"},
  };
  return flags;
}

Location Flag(const std::string& name) { return {"command line", 0, "--" + name}; }

}  // namespace

int CmdWeb(const std::vector<std::string>& argv) {
  auto args = ParseArgs(argv, WebFlags(), false);
  if (!args.ok()) return Fail(args.status());
  if (args->Has("help")) {
    std::printf("usage: gpuplan web [--port 8600] [--host 127.0.0.1]\n\n"
                "Serves the page (plots of plan, memory, estimate, serving and fleet answers) and the JSON API of the same\n"
                "commands (docs/web.md) until Ctrl-C. Nothing is read from disk after start-up.\n\n%s",
                FlagHelp(WebFlags(), false).c_str());
    return 0;
  }
  if (!args->positional.empty()) return Fail(Status::BadInput(Flag("port"), "gpuplan web takes no file (jobs are posted to the API)"));
  server::ServerOptions opt;
  opt.host = args->Get("host", server::kDefaultHost);
  auto port = ParseInteger(args->Get("port", std::to_string(server::kDefaultPort)), Flag("port"), 0, 65535);
  if (!port.ok()) return Fail(port.status());
  opt.port = static_cast<int>(*port);
  auto max_items = ParseInteger(args->Get("max-plan-candidates", std::to_string(server::kDefaultMaxPlanItems)),
                                Flag("max-plan-candidates"), 0, int64_t{1} << 40);
  if (!max_items.ok()) return Fail(max_items.status());
  opt.max_plan_items = *max_items;
  auto threads = ParseInteger(args->Get("threads", std::to_string(server::kDefaultRequestThreads)), Flag("threads"), 1, 256);
  if (!threads.ok()) return Fail(threads.status());
  opt.request_threads = static_cast<int>(*threads);
  auto searches = ParseInteger(args->Get("searches", std::to_string(server::kDefaultConcurrentSearches)), Flag("searches"), 1, 64);
  if (!searches.ok()) return Fail(searches.status());
  opt.concurrent_searches = static_cast<int>(*searches);
  if (!server::IsLoopbackHost(opt.host))
    std::fprintf(stderr,
                 "gpuplan: warning: --host %s: the page and the API are reachable from other machines; they have no "
                 "authentication (docs/web.md \"Safety\")\n",
                 opt.host.c_str());

  // SIGINT/SIGTERM are taken by one thread (sigwait) that stops the server; every other thread blocks them.
  // A shell starts background jobs with SIGINT ignored, and an ignored signal is discarded even when blocked:
  // back to the default disposition first, so `gpuplan web &` stops on SIGINT too.
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  server::WebServer web(opt);
  if (Status st = web.Bind(); !st.ok()) return Fail(st);
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fprintf(stderr, "gpuplan: web: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    web.Stop();
  });
  const std::string shown = opt.host.find(':') != std::string::npos ? "[" + opt.host + "]" : opt.host;
  std::printf("gpuplan web: serving http://%s:%d/ (Ctrl-C stops)\n", shown.c_str(), web.port());
  std::fflush(stdout);
  const bool ok = web.Run();
  // Run returns on Stop (a signal) or a failure; a failure leaves the waiter blocked: wake it.
  if (waiter.joinable()) {
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
  }
  return ok ? 0 : 3;
}

}  // namespace gpuplan::cli
