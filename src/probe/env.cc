// The Env behind `gpuplan probe`: the real machine (files, PATH, fork+exec) and a recorded tree.
#include <fcntl.h>
#include <hwloc.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "gpuplan/csv.h"
#include "gpuplan/input_file.h"
#include "gpuplan/probe.h"
#include "gpuplan/strings.h"

extern char** environ;

namespace gpuplan {

namespace {

// procfs and sysfs files are regular files (size 0 or 4096, read to their end); a FIFO, a device or a
// 100 MB file in a recorded tree is refused, never read (the one input reader, input_file.h).
Result<std::string> ReadWholeFile(const std::string& real_path, const std::string& shown_path) {
  auto text = ReadInputFile(real_path);
  // sysfs attributes a driver cannot answer (a NIC's speed with the link down) fail on read.
  if (!text.ok()) return Status::BadInput({shown_path, 0, ""}, text.status().reason());
  return text;
}

// A path of a recorded tree, resolved with its symlinks: inside `root` (itself resolved), or an error.
// sysfs links are relative and stay inside (class/net/eth0 -> ../../devices/...); a link to /etc/passwd
// or a "../../" step out of the tree is refused, so a recorded tree reads only itself.
Result<std::string> Confined(const std::string& root, const std::string& path, const std::string& shown_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.find('\0') != std::string::npos) return Status::BadInput({shown_path, 0, ""}, "not a path");
  const fs::path real = fs::weakly_canonical(fs::path(root) / fs::path(path).relative_path(), ec);
  if (ec) return Status::BadInput({shown_path, 0, ""}, "cannot resolve: " + ec.message());
  const std::string r = real.string();
  if (r != root && r.rfind(root + "/", 0) != 0)
    return Status::BadInput({shown_path, 0, ""}, "leads outside the recorded tree (a symlink or '..' to " + r +
                                                      "): a recorded machine is read only from its own folder");
  return r;
}

Result<std::vector<std::string>> ListRealDir(const std::string& real_path, const std::string& shown_path) {
  std::error_code ec;
  std::vector<std::string> names;
  for (std::filesystem::directory_iterator it(real_path, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  if (ec) return Status::BadInput({shown_path, 0, ""}, "cannot list: " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

// hwloc 2.x reads the Linux root from HWLOC_FSROOT only (hwloc 1.x's hwloc_topology_set_fsroot is gone):
// set it for one load and put the caller's value back. The lock keeps two loads in this process apart.
std::mutex hwloc_env_mutex;

class ScopedEnvVar {
 public:
  // keep_set: leave a value the user set in place (HWLOC_HIDE_ERRORS=0 to see hwloc's own messages).
  ScopedEnvVar(const char* name, const std::string& value, bool keep_set = false) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (!(keep_set && old_)) setenv(name, value.c_str(), 1);
  }
  ~ScopedEnvVar() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string BitmapList(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || !text) return "";
  std::string s(text);
  std::free(text);
  return s;
}

}  // namespace

Result<CpuTopology> ReadHwlocTopology(const std::string& fsroot) {
  std::error_code ec;
  const std::string root = std::filesystem::absolute(fsroot, ec).string();
  if (ec || !std::filesystem::is_directory(root, ec))
    return Status::BadInput({fsroot, 0, ""}, "hwloc: not a folder");
  std::lock_guard<std::mutex> lock(hwloc_env_mutex);
  ScopedEnvVar fs("HWLOC_FSROOT", root);
  // hwloc's stderr lines ("failed to find sysfs cpu topology directory") become this function's reason.
  ScopedEnvVar quiet("HWLOC_HIDE_ERRORS", "2", /*keep_set=*/true);
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0) return Status::Internal("hwloc_topology_init failed");
  struct Destroy {
    hwloc_topology_t t;
    ~Destroy() { hwloc_topology_destroy(t); }
  } destroy{topo};
  // Only the Linux backend: x86 CPUID would describe the CPU this runs on, not the tree under fsroot.
  hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
  hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (hwloc_topology_load(topo) != 0)
    return Status::BadInput({fsroot, 0, ""}, std::string("hwloc_topology_load: ") + std::strerror(errno));
  // Without sysfs cpu topology the Linux backend gives up and hwloc falls back to one PU of no OS.
  const char* backend = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "Backend");
  if (!backend || std::string(backend) != "Linux")
    return Status::BadInput({fsroot, 0, ""}, "hwloc's Linux backend found no sysfs cpu topology "
                                             "(sys/devices/system/cpu/cpu0/topology/{thread,core}_siblings)");
  CpuTopology t;
  t.reader = std::string("hwloc ") + HWLOC_VERSION;
  t.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  t.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  t.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n));) {
    NumaNode node;
    node.id = static_cast<int>(n->os_index);
    node.cpulist = BitmapList(n->cpuset);
    node.mem_bytes = static_cast<int64_t>(n->attr->numanode.local_memory);
    node.cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, n->cpuset, HWLOC_OBJ_CORE);
    node.pus = hwloc_bitmap_weight(n->cpuset);
    t.numa.push_back(node);
  }
  std::sort(t.numa.begin(), t.numa.end(), [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  if (t.pus <= 0 || t.numa.empty()) return Status::BadInput({fsroot, 0, ""}, "hwloc found no PUs or no NUMA node");
  return t;
}

Result<CpuTopology> Env::Topology() { return Status::BadInput({"", 0, ""}, "this Env has no hwloc reader"); }

namespace {

class RealEnv : public Env {
 public:
  Result<CpuTopology> Topology() override { return ReadHwlocTopology("/"); }
  Result<std::string> ReadFile(const std::string& path) override { return ReadWholeFile(path, path); }
  Result<std::vector<std::string>> ListDir(const std::string& path) override { return ListRealDir(path, path); }

  bool HasProgram(const std::string& name) override { return !FindProgram(name).empty(); }

  Result<RunResult> Run(const std::vector<std::string>& argv) override {
    if (argv.empty()) return Status::Internal("Run: empty argv");
    const std::string exe = FindProgram(argv[0]);
    if (exe.empty()) return Status::BadInput({"", 0, argv[0]}, "not found (not installed, or not on PATH)");
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) return Status::Internal(std::string("pipe: ") + std::strerror(errno));
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
      close(out_pipe[0]), close(out_pipe[1]);
      return Status::Internal(std::string("pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out_pipe[1]), close(err_pipe[1]);
    if (rc != 0) {
      close(out_pipe[0]), close(err_pipe[0]);
      return Status::BadInput({"", 0, argv[0]}, std::string("cannot run: ") + std::strerror(rc));
    }
    RunResult r;
    Drain(out_pipe[0], err_pipe[0], r);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return r;
  }

 private:
  static std::string FindProgram(const std::string& name) {
    if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
    const char* path = std::getenv("PATH");
    std::stringstream ss(path ? path : "/usr/local/bin:/usr/bin:/bin");
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      if (dir.empty()) continue;
      std::string p = dir + "/" + name;
      if (access(p.c_str(), X_OK) == 0 && !std::filesystem::is_directory(p)) return p;
    }
    return "";
  }

  // Reads both pipes to their end (poll, so a full stderr pipe cannot block the child).
  static void Drain(int out_fd, int err_fd, RunResult& r) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    std::string* sinks[2] = {&r.out, &r.err};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n > 0) {
          sinks[i]->append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
  }
};

// hwloc reads the tree on its own (HWLOC_FSROOT): before it does, every entry is a folder, a regular
// file or a symlink that stays inside. A FIFO would hang hwloc's read, a device feed it forever.
Status CheckRecordedTree(const std::string& fs_root, const std::string& shown_root) {
  namespace fs = std::filesystem;
  constexpr int64_t kMaxEntries = 1 << 20;  // a recorded sysfs/procfs subset is a few thousand entries
  std::error_code ec;
  int64_t n = 0;
  for (fs::recursive_directory_iterator it(fs_root, fs::directory_options::none, ec), end; !ec && it != end; it.increment(ec)) {
    if (++n > kMaxEntries) return Status::BadInput({shown_root, 0, ""}, "more than 1M entries: not a recorded machine");
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    const std::string rel = it->path().lexically_relative(fs_root).string();  // the link itself, not its target
    const std::string shown = shown_root + "/" + rel;
    const Location flag{"command line", 0, "--recorded"};
    if (fs::is_symlink(st)) {
      auto inside = Confined(fs_root, rel, shown);
      if (!inside.ok()) return Status::BadInput(flag, shown + ": " + inside.status().reason());
      continue;
    }
    if (!fs::is_directory(st) && !fs::is_regular_file(st))
      return Status::BadInput(flag, shown + ": not a regular file (a FIFO, a socket or a device): a recorded tree holds copies of files");
    if (fs::is_regular_file(st) && static_cast<int64_t>(it->file_size(ec)) > kMaxInputFileBytes)
      return Status::BadInput(flag, shown + ": over the 64 MiB input limit: a recorded procfs/sysfs file is a few KiB");
  }
  if (ec) return Status::BadInput({shown_root, 0, ""}, "cannot list: " + ec.message());
  return Status::Ok();
}

class RecordedEnv : public Env {
 public:
  // root: the recorded folder, resolved (std::filesystem::canonical).
  RecordedEnv(std::string root, std::string fs, std::map<std::string, std::pair<std::string, int>> commands)
      : root_(std::move(root)), fs_(std::move(fs)), commands_(std::move(commands)) {}

  Result<std::string> ReadFile(const std::string& path) override {
    auto real = Confined(fs_, path, path);
    if (!real.ok()) return real.status();
    return ReadWholeFile(*real, path);
  }
  Result<CpuTopology> Topology() override { return ReadHwlocTopology(fs_); }
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    auto real = Confined(fs_, path, path);
    if (!real.ok()) return real.status();
    return ListRealDir(*real, path);
  }
  bool HasProgram(const std::string& name) override {
    for (const auto& [line, file] : commands_)
      if (line == name || line.rfind(name + " ", 0) == 0) return true;
    return false;
  }
  Result<RunResult> Run(const std::vector<std::string>& argv) override {
    if (argv.empty()) return Status::Internal("Run: empty argv");
    std::string line;
    for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
    auto it = commands_.find(line);
    if (it == commands_.end()) {
      if (HasProgram(argv[0]))
        return Status::BadInput({root_ + "/commands/index.tsv", 0, argv[0]}, "no recorded output for '" + line + "'");
      return Status::BadInput({"", 0, argv[0]}, "not found (not installed, or not on PATH)");
    }
    auto real = Confined(root_ + "/commands", it->second.first, "commands/" + it->second.first);
    if (!real.ok()) return real.status();
    auto text = ReadWholeFile(*real, "commands/" + it->second.first);
    if (!text.ok()) return text.status();
    RunResult r;
    r.exit_code = it->second.second;
    (r.exit_code == 0 ? r.out : r.err) = *text;
    return r;
  }

 private:
  std::string root_, fs_;
  std::map<std::string, std::pair<std::string, int>> commands_;  // argv line -> (file, exit code)
};

}  // namespace

std::unique_ptr<Env> NewRealEnv() { return std::make_unique<RealEnv>(); }

Result<std::unique_ptr<Env>> NewRecordedEnv(const std::string& given_root) {
  std::error_code ec;
  if (given_root.empty()) return Status::BadInput({"command line", 0, "--recorded"}, "needs a folder");
  if (!std::filesystem::is_directory(given_root + "/fs", ec))
    return Status::BadInput({given_root, 0, ""}, "not a recorded machine (no fs/ folder)");
  const std::string root = std::filesystem::canonical(given_root, ec).string();
  if (ec) return Status::BadInput({given_root, 0, ""}, "cannot resolve the folder: " + ec.message());
  auto fs_dir = Confined(root, "fs", given_root + "/fs");
  if (!fs_dir.ok()) return fs_dir.status();
  GPUPLAN_RETURN_IF_ERROR(CheckRecordedTree(*fs_dir, given_root + "/fs"));
  std::map<std::string, std::pair<std::string, int>> commands;
  const std::string index = root + "/commands/index.tsv";
  if (std::filesystem::exists(index, ec)) {
    auto real_index = Confined(root, "commands/index.tsv", index);
    if (!real_index.ok()) return real_index.status();
    auto text = ReadInputFile(*real_index);
    if (!text.ok()) return text.status();
    std::istringstream in(*text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.empty() || line[0] == '#') continue;
      std::vector<std::string> cols;
      std::stringstream ls(line);
      for (std::string c; std::getline(ls, c, '\t');) cols.push_back(c);
      if (cols.size() != 3)
        return Status::BadInput({index, n, ""}, "expected 'COMMAND<TAB>FILE<TAB>EXIT_CODE', got " + std::to_string(cols.size()) + " fields");
      auto code = ParseInteger(cols[2], {index, n, "exit_code"}, 0, 255);
      if (!code.ok()) return code.status();
      commands[cols[0]] = {cols[1], static_cast<int>(*code)};
    }
  }
  return std::unique_ptr<Env>(std::make_unique<RecordedEnv>(root, *fs_dir, std::move(commands)));
}

}  // namespace gpuplan
