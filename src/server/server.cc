#include "server/server.h"

#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "gpuplan/report.h"
#include "server/web_files.h"

namespace gpuplan::server {

namespace {

constexpr const char* kJsonType = "application/json";

// At most `n` searches at once; the others wait for a slot (a request thread each).
class SearchSlots {
 public:
  explicit SearchSlots(int n) : free_(n > 0 ? n : 1) {}
  void Acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int free_;
};

// The Host header of a request to a loopback server: a loopback name, with or without a port. Anything else
// is a page on another site reaching this server through its own DNS name (DNS rebinding), refused.
bool LoopbackHostHeader(const std::string& host_header) {
  std::string h = host_header;
  if (!h.empty() && h[0] == '[') {
    const size_t close = h.find(']');
    if (close == std::string::npos) return false;
    h = h.substr(0, close + 1);
  } else if (const size_t colon = h.rfind(':'); colon != std::string::npos) {
    h = h.substr(0, colon);
  }
  return h == "localhost" || h == "[::1]" || IsLoopbackHost(h);
}

void SetError(httplib::Response& res, int status, const std::string& key, const std::string& message) {
  res.status = status;
  res.set_content(ErrorBody(Status::BadInput({"request", 0, key}, message)), kJsonType);
}

std::string SseEvent(const std::string& event, const std::string& data) {
  return "event: " + event + "\ndata: " + data + "\n\n";
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  unsigned a = 0, b = 0, c = 0, d = 0;
  char tail = 0;
  return std::sscanf(host.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a == 127 && b < 256 && c < 256 && d < 256;
}

struct WebServer::Impl {
  explicit Impl(ServerOptions o) : opt(std::move(o)), slots(opt.concurrent_searches) {}

  ServerOptions opt;
  httplib::Server svr;
  int port = 0;
  SearchSlots slots;
  std::atomic<int64_t> commands_running{0};
  std::atomic<int64_t> streams_cancelled{0};

  void Routes();
  void RunJob(const std::string& route, const httplib::Request& req, httplib::Response& res);
  void Stream(Invocation inv, httplib::Response& res);
};

// One streamed run: the command on its own thread, progress polled by the connection's thread. The response
// owns it; its end (the last event sent, or the client gone) cancels and joins the search.
struct StreamRun {
  Invocation inv;
  std::atomic<int64_t> done{0};
  std::atomic<int64_t> total{0};
  std::atomic<bool> cancel{false};
  std::atomic<bool> finished{false};
  CommandOutput output;
  std::thread worker;
  ~StreamRun() {
    cancel = true;
    if (worker.joinable()) worker.join();
  }
};

void WebServer::Impl::Stream(Invocation inv, httplib::Response& res) {
  auto run = std::make_shared<StreamRun>();
  run->inv = std::move(inv);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, run](size_t, httplib::DataSink& sink) {
        StreamRun* r = run.get();
        if (!r->worker.joinable() && !r->finished) {
          r->worker = std::thread([this, r] {
            if (r->inv.search) slots.Acquire();
            ++commands_running;
            const RunControl control{&r->done, &r->total, &r->cancel, 0};  // streamed: no item limit
            r->output = RunInvocation(r->inv, control);
            --commands_running;
            if (r->inv.search) slots.Release();
            r->finished = true;
          });
        }
        while (!r->finished) {
          std::this_thread::sleep_for(std::chrono::milliseconds(kProgressIntervalMs));
          if (r->finished) break;
          const std::string ev = SseEvent("progress", nlohmann::json{{"done", r->done.load()}, {"total", r->total.load()}}.dump());
          if (!sink.is_writable() || !sink.write(ev.data(), ev.size())) {
            // The client went away: the search stops at its next work item.
            r->cancel = true;
            ++streams_cancelled;
            return false;
          }
        }
        if (r->worker.joinable()) r->worker.join();
        nlohmann::json result;
        try {
          result = nlohmann::json::parse(r->output.out);
        } catch (const std::exception&) {
          result = nullptr;
        }
        const nlohmann::json last = {{"status", HttpStatusForExit(r->output.exit_code)},
                                     {"exit_code", r->output.exit_code},
                                     {"result", result}};
        const std::string ev = SseEvent("result", last.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        sink.write(ev.data(), ev.size());
        sink.done();
        return true;
      },
      [run](bool success) {
        if (!success) run->cancel = true;
      });
}

void WebServer::Impl::RunJob(const std::string& route, const httplib::Request& req, httplib::Response& res) {
  auto inv = BuildInvocation(route, req.body);
  if (!inv.ok()) {
    res.status = 400;
    res.set_content(ErrorBody(inv.status()), kJsonType);
    return;
  }
  if (req.has_param("stream") && req.get_param_value("stream") != "0") return Stream(std::move(inv).value(), res);
  RunControl control;
  control.max_plan_items = opt.max_plan_items;
  if (inv->search) slots.Acquire();
  ++commands_running;
  CommandOutput out = RunInvocation(*inv, control);
  --commands_running;
  if (inv->search) slots.Release();
  res.status = HttpStatusForExit(out.exit_code);
  res.set_content(out.out, kJsonType);
}

void WebServer::Impl::Routes() {
  svr.set_payload_max_length(kMaxBodyBytes);
  svr.set_keep_alive_max_count(kKeepAliveMaxRequests);
  svr.new_task_queue = [n = opt.request_threads] { return new httplib::ThreadPool(static_cast<size_t>(n > 0 ? n : 1)); };
  const bool loopback = IsLoopbackHost(opt.host);
  svr.set_pre_routing_handler([loopback](const httplib::Request& req, httplib::Response& res) {
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    if (loopback && !LoopbackHostHeader(req.get_header_value("Host"))) {
      SetError(res, 403, "Host", "this server answers requests to 127.0.0.1 or localhost only (docs/web.md \"Safety\")");
      return httplib::Server::HandlerResponse::Handled;
    }
    // A JSON content type: a page on another site cannot send one without the browser asking first (CORS),
    // which this server never allows.
    if (req.method == "POST" && req.get_header_value("Content-Type").rfind(kJsonType, 0) != 0) {
      SetError(res, 415, "Content-Type", "POST bodies are JSON: send Content-Type: application/json");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string why = res.status == 404   ? "no such route or file: " + req.method + " " + req.path
                            : res.status == 413 ? "the body is over the " + std::to_string(kMaxBodyBytes >> 20) + " MiB limit"
                            : res.status == 405 ? "method not allowed"
                                                : "bad request";
    SetError(res, res.status, "", why);
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& ex) {
      what = ex.what();
    } catch (...) {
    }
    res.status = 500;
    res.set_content(ErrorBody(Status::Internal("internal error: " + what)), kJsonType);
  });
  svr.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    const nlohmann::json j = {{"status", "ok"},
                              {"version", kVersion},
                              {"commands_running", commands_running.load()},
                              {"streams_cancelled", streams_cancelled.load()}};
    res.set_content(j.dump(2) + "\n", kJsonType);
  });
  svr.Get("/api/models", [](const httplib::Request&, httplib::Response& res) {
    CommandOutput out = RunModels();
    res.status = HttpStatusForExit(out.exit_code);
    res.set_content(out.out, kJsonType);
  });
  svr.Get(R"(/api/catalog/(gpus|instances|links|storage))", [](const httplib::Request& req, httplib::Response& res) {
    CommandOutput out = RunCatalog(req.matches[1]);
    res.status = HttpStatusForExit(out.exit_code);
    res.set_content(out.out, kJsonType);
  });
  for (const std::string& route : JobRoutes())
    svr.Post("/api/" + route, [this, route](const httplib::Request& req, httplib::Response& res) { RunJob(route, req, res); });
  // Alias of POST /api/plan?stream=1.
  svr.Post("/api/plan/stream", [this](const httplib::Request& req, httplib::Response& res) {
    auto inv = BuildInvocation("plan", req.body);
    if (!inv.ok()) {
      res.status = 400;
      res.set_content(ErrorBody(inv.status()), kJsonType);
      return;
    }
    Stream(std::move(inv).value(), res);
  });
  // The page: exactly the embedded files, nothing from disk (a path that is not one of them is 404).
  svr.Get(R"(/.*)", [](const httplib::Request& req, httplib::Response& res) {
    const WebFile* f = FindWebFile(req.path);
    if (f == nullptr) {
      SetError(res, 404, "", "no such route or file: GET " + req.path);
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_content(std::string(f->content), std::string(f->content_type).c_str());
  });
}

WebServer::WebServer(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  // A client that closes its connection mid-answer must not kill the server with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  impl_->Routes();
}

WebServer::~WebServer() { Stop(); }

Status WebServer::Bind() {
  const ServerOptions& o = impl_->opt;
  if (o.port == 0) {
    const int p = impl_->svr.bind_to_any_port(o.host);
    if (p <= 0) return Status::BadInput({"command line", 0, "--host"}, "cannot listen on " + o.host + " (any port)");
    impl_->port = p;
    return Status::Ok();
  }
  if (!impl_->svr.bind_to_port(o.host, o.port))
    return Status::BadInput({"command line", 0, "--port"},
                            "cannot listen on " + o.host + ":" + std::to_string(o.port) + " (in use, or not an address of this machine)");
  impl_->port = o.port;
  return Status::Ok();
}

int WebServer::port() const { return impl_->port; }

bool WebServer::Run() { return impl_->svr.listen_after_bind(); }

void WebServer::Stop() {
  if (impl_->svr.is_running()) impl_->svr.stop();
}

}  // namespace gpuplan::server
