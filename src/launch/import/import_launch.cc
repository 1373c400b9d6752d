// gpuplan import: launchers (torchrun, deepspeed, accelerate launch) and the commands of a shell file.
#include "import_internal.h"

namespace gpuplan::import_detail {

std::vector<Flag> GroupFlags(const Command& c, size_t from, std::vector<Word>& positional) {
  std::vector<Flag> out;
  for (size_t i = from; i < c.size(); ++i) {
    const Word& w = c[i];
    if (w.text.rfind("--", 0) == 0 && w.text.size() > 2) {
      Flag f{w.text.substr(2), {}, w};
      if (auto eq = f.name.find('='); eq != std::string::npos) {
        f.values.push_back({f.name.substr(eq + 1), w.line, w.unresolved});
        f.name = f.name.substr(0, eq);
        f.eq = true;
      }
      out.push_back(std::move(f));
    } else if (!out.empty() && !out.back().eq) {
      out.back().values.push_back(w);
    } else {
      positional.push_back(w);
    }
  }
  return out;
}

// A launcher's flags from `from` up to its first positional word (the script): its index.
size_t ScanLauncher(const Command& c, size_t from, const std::set<std::string>& valued, const std::set<std::string>& switches,
                    std::vector<LaunchFlag>& flags, std::vector<LaunchFlag>& unknown, bool& module) {
  size_t i = from;
  for (; i < c.size(); ++i) {
    const std::string& t = c[i].text;
    if (t.size() < 2 || t[0] != '-') break;
    std::string name = t.substr(t[1] == '-' ? 2 : 1);
    std::optional<Word> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = Word{name.substr(eq + 1), c[i].line, c[i].unresolved};
      name = name.substr(0, eq);
    }
    const std::string n = Norm(name);
    if (n == "m" || n == "module") {
      module = true;
      continue;
    }
    if (valued.count(n)) {
      if (!value && i + 1 < c.size()) value = c[++i];
      flags.push_back({n, c[i], value});
    } else if (switches.count(n)) {
      flags.push_back({n, c[i], value});
    } else {
      unknown.push_back({n, c[i], value});
    }
  }
  return i;
}


Result<std::string> Importer::ReadConfigText(const std::string& value, const Location& w, int depth, ImportKind expect, std::string& path) {
  path = Relative(w.file, value);
  if (depth + 1 > kMaxDepth) return Bad(w, "files name files more than " + Str(kMaxDepth) + " levels deep");
  std::error_code ec;
  if (!fs::exists(path, ec)) return Bad(w, "names '" + path + "', which does not exist (relative paths are read from the directory of " + w.file + ")");
  auto text = ReadInputFile(path);
  if (!text.ok()) return Bad(w, "cannot read '" + path + "': " + text.status().reason());
  auto kind = DetectImportKind(*text, path);
  if (!kind.ok()) return kind.status();
  if (*kind != expect) return Bad(w, "names '" + path + "', which reads as " + ToString(*kind) + ", not " + ToString(expect));
  const std::string canon = fs::weakly_canonical(path, ec).string();
  if (read_.insert(ec ? path : canon).second) out_.files.push_back({path, expect});
  return text;
}

// A value word of a launcher flag: its whole number, or why it is unknown (Unresolved).
Result<std::optional<int64_t>> LaunchInt(Importer& im, const LaunchFlag& f, const std::string& file, const std::string& what, int64_t max) {
  const Location w{file, f.word.line, "--" + f.norm};
  if (!f.value) {
    im.Unresolved(w, "needs a value; " + what + " stays unknown");
    return std::optional<int64_t>();
  }
  if (!f.value->unresolved.empty()) {
    im.Unresolved(w, f.value->text + ": " + f.value->unresolved + "; " + what + " stays unknown (give it as a flag, e.g. --num-gpus)");
    return std::optional<int64_t>();
  }
  auto num = ParseDecimal(f.value->text, w);
  if (!num.ok()) {  // torchrun's "gpu", "auto": one per device of the machine it runs on
    im.Unresolved(w, "'" + f.value->text + "' is not a number of " + what + "; it stays unknown (give --gpus-per-node / --num-gpus)");
    return std::optional<int64_t>();
  }
  auto v = Int(f.value->text, w, 1, max);
  if (!v.ok()) return v.status();
  return std::optional<int64_t>(*v);
}

Status PutWorld(Importer& im, std::optional<int64_t> nodes, const Location& nloc, std::optional<int64_t> procs, const Location& ploc) {
  if (!procs) return Status::Ok();
  GPUPLAN_RETURN_IF_ERROR(im.Put("cluster.gpus_per_node", Str(*procs), ploc));
  if (nodes) GPUPLAN_RETURN_IF_ERROR(im.Put("cluster.num_gpus", Str(*nodes * *procs), *nodes > 1 ? nloc : ploc));
  return Status::Ok();
}

void ReportLauncherFlags(Importer& im, const std::vector<LaunchFlag>& known, const std::vector<LaunchFlag>& unknown,
                         const std::set<std::string>& used, const std::string& file, const std::string& launcher) {
  for (const auto& f : known)
    if (!used.count(f.norm)) im.Note({file, f.word.line, "--" + f.norm}, "read, no effect on the estimate");
  for (const auto& f : unknown) im.Unknown({file, f.word.line, f.word.text}, "not " + Article(launcher) + " flag gpuplan knows");
}

Status Torchrun(Importer& im, const std::vector<LaunchFlag>& flags, const std::vector<LaunchFlag>& unknown, const std::string& file) {
  std::optional<int64_t> nodes = 1, procs;
  Location nloc{file, 0, "--nnodes"}, ploc{file, 0, "--nproc-per-node"};
  for (const auto& f : flags) {
    const Location w{file, f.word.line, "--" + f.norm};
    if (f.norm == "standalone") nodes = 1;
    if (f.norm == "nnodes") {
      nloc = w;
      if (f.value && f.value->unresolved.empty() && f.value->text.find(':') != std::string::npos) {
        const std::string max = f.value->text.substr(f.value->text.find(':') + 1);
        im.Note(w, "an elastic range: the job is planned at its largest, " + max + " nodes");
        LaunchFlag g = f;
        g.value->text = max;
        auto v = LaunchInt(im, g, file, "nodes", 1 << 20);
        if (!v.ok()) return v.status();
        nodes = *v;
      } else {
        auto v = LaunchInt(im, f, file, "nodes", 1 << 20);
        if (!v.ok()) return v.status();
        nodes = *v;
      }
    }
    if (f.norm == "nproc-per-node") {
      ploc = w;
      auto v = LaunchInt(im, f, file, "processes per node", 64);
      if (!v.ok()) return v.status();
      procs = *v;
    }
  }
  if (ploc.line == 0) {
    im.Note({file, flags.empty() ? 0 : flags[0].word.line, "torchrun"}, "no --nproc-per-node: torchrun starts 1 process per node");
    ploc.line = flags.empty() ? 1 : flags[0].word.line;
    procs = 1;
  }
  ReportLauncherFlags(im, flags, unknown, {"standalone", "nnodes", "nproc-per-node"}, file, "torchrun");
  return PutWorld(im, nodes, nloc, procs, ploc);
}

Status DeepspeedLauncher(Importer& im, const std::vector<LaunchFlag>& flags, const std::vector<LaunchFlag>& unknown, const std::string& file) {
  std::optional<int64_t> nodes, procs;
  Location nloc{file, 0, "--num_nodes"}, ploc{file, 0, "--num_gpus"};
  std::optional<Location> hostfile_at;
  std::string hostfile;
  for (const auto& f : flags) {
    const Location w{file, f.word.line, "--" + f.norm};
    if (f.norm == "num-nodes") {
      nloc = w;
      auto v = LaunchInt(im, f, file, "nodes", 1 << 20);
      if (!v.ok()) return v.status();
      nodes = *v;
    }
    if (f.norm == "num-gpus" || f.norm == "num-accelerators") {
      ploc = w;
      auto v = LaunchInt(im, f, file, "GPUs per node", 64);
      if (!v.ok()) return v.status();
      procs = *v;
    }
    if ((f.norm == "hostfile" || f.norm == "h") && f.value && f.value->unresolved.empty()) hostfile_at = w, hostfile = f.value->text;
    if (f.norm == "include" || f.norm == "i" || f.norm == "exclude" || f.norm == "e")
      im.Note(w, "a host/GPU filter: not applied (give --num-gpus for the GPUs it leaves)");
  }
  if (hostfile_at && (!nodes || !procs)) {
    // hostfile lines: "host slots=N" (DeepSpeed getting-started)
    const std::string path = Relative(file, hostfile);
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
      auto text = ReadInputFile(path);
      if (!text.ok()) return Bad(*hostfile_at, "cannot read '" + path + "': " + text.status().reason());
      int64_t hosts = 0, slots = -1, line_no = 0;
      std::istringstream is(*text);
      for (std::string line; std::getline(is, line);) {
        ++line_no;
        if (auto h = line.find('#'); h != std::string::npos) line.erase(h);
        std::istringstream ls(line);
        std::string host, s;
        if (!(ls >> host)) continue;
        ++hosts;
        int64_t n = -1;
        while (ls >> s)
          if (s.rfind("slots=", 0) == 0) {
            auto v = Int(s.substr(6), {path, static_cast<int>(line_no), "slots"}, 1, 64);
            if (!v.ok()) return v.status();
            n = *v;
          }
        if (n < 0) return Bad({path, static_cast<int>(line_no), host}, "a hostfile line is `host slots=N`");
        if (slots >= 0 && n != slots) return Bad({path, static_cast<int>(line_no), "slots"}, "hosts with different slot counts: gpuplan plans equal nodes");
        slots = n;
      }
      if (hosts > 0) {
        if (!nodes) nodes = hosts, nloc = {path, 1, "hosts"};
        if (!procs) procs = slots, ploc = {path, 1, "slots"};
      }
    } else {
      im.Unresolved(*hostfile_at, "'" + path + "' not found: its nodes and slots are unknown");
    }
  }
  if (!procs) im.Unresolved({file, flags.empty() ? 1 : flags[0].word.line, "deepspeed"}, "no --num_gpus: deepspeed uses every GPU of each node; give --gpus-per-node and --num-gpus");
  if (!nodes) nodes = 1;
  ReportLauncherFlags(im, flags, unknown, {"num-nodes", "num-gpus", "num-accelerators", "include", "i", "exclude", "e"}, file, "deepspeed");
  return PutWorld(im, nodes, nloc, procs, ploc);
}

Status AccelerateLaunch(Importer& im, const std::vector<LaunchFlag>& flags, const std::vector<LaunchFlag>& unknown, const std::string& file,
                        int depth) {
  FlatConfig cfg;
  cfg.file = file;
  bool has_config = false;
  for (const auto& f : flags) {
    if (f.norm != "config-file") continue;
    const Location w{file, f.word.line, "--config_file"};
    if (!f.value || !f.value->unresolved.empty()) {
      im.Unresolved(w, (f.value ? f.value->text + ": " + f.value->unresolved : "needs a value") + "; the accelerate config is not read");
      continue;
    }
    std::string path;
    auto text = im.ReadConfigText(f.value->text, w, depth, ImportKind::kAccelerateConfig, path);
    if (!text.ok()) return text.status();
    GPUPLAN_RETURN_IF_ERROR(im.ReadAccelerateInto(*text, path, cfg));
    has_config = true;
  }
  if (!has_config)
    im.Note({file, flags.empty() ? 1 : flags[0].word.line, "accelerate launch"},
            "no --config_file: accelerate reads its default config (~/.cache/huggingface/accelerate/default_config.yaml), not read here");
  for (const auto& f : flags) {
    const Location w{file, f.word.line, "--" + f.norm};
    if (auto sw = AccelerateSwitches().find(f.norm); sw != AccelerateSwitches().end()) {
      if (sw->second.empty()) {
        im.Note(w, "read, no effect on the estimate");
        continue;
      }
      const size_t eq = sw->second.find('=');
      cfg.Override({sw->second.substr(0, eq), sw->second.substr(eq + 1), w});
      continue;
    }
    auto it = AccelerateFlags().find(f.norm);
    if (it == AccelerateFlags().end() || f.norm == "config-file") continue;
    if (it->second.empty()) {
      im.Note(w, "read, no effect on the estimate");
      continue;
    }
    if (!f.value || !f.value->unresolved.empty()) {
      im.Unresolved(w, (f.value ? f.value->text + ": " + f.value->unresolved : "needs a value") + "; not applied");
      continue;
    }
    cfg.Override({it->second, f.value->text, w});
  }
  for (const auto& f : unknown) im.Unknown({file, f.word.line, f.word.text}, "not an accelerate launch flag gpuplan knows");
  return im.ApplyAccelerate(cfg, depth);
}


bool HasMegatronFlag(const Command& c, size_t from) {
  for (size_t i = from; i < c.size(); ++i)
    for (const char* f : {"--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--micro-batch-size", "--num-layers", "--global-batch-size"})
      if (c[i].text.rfind(f, 0) == 0) return true;
  return false;
}

Status ScriptArgs(Importer& im, const std::string& script, bool module, const Command& c, size_t from, const std::string& file, int depth) {
  std::vector<Word> positional;
  const std::vector<Flag> flags = GroupFlags(c, from, positional);
  for (const auto& p : positional)
    if (!p.text.empty()) im.Unknown({file, p.line, p.text}, "a positional argument of " + (script.empty() ? std::string("the command") : Base(script)) + ": not read");
  const std::string b = Base(script);
  if (b.rfind("pretrain_", 0) == 0 || HasMegatronFlag(c, from)) return Megatron(im, flags, file, depth);
  bool titan = (module && script == "torchtitan.train") || EndsWith(script, "torchtitan/train.py");
  for (const auto& f : flags) titan |= f.name == "job.config_file" || f.name == "job.config-file";
  if (titan) return TitanArgs(im, flags, file, depth);
  return TrainerArgs(im, flags, file, script, depth);
}

enum class Launcher { kNone, kTorchrun, kDeepspeed, kAccelerate };

// One command of a shell file: the launcher (if any), its script and the script's arguments.
Result<bool> ParseCommand(Importer& im, const Command& c, const std::string& file, int depth) {
  size_t k = 0;
  for (; k < c.size(); ++k) {
    const std::string b = Base(c[k].text);
    if (b == "torchrun" || b == "deepspeed" || b == "accelerate" || (b.rfind("python", 0) == 0 && c[k].unresolved.empty()) ||
        (EndsWith(b, ".py") && c[k].text.rfind("-", 0) != 0))
      break;
  }
  if (k == c.size()) return false;
  if (k > 0) im.Note({file, c[0].line, c[0].text}, "the words before " + Base(c[k].text) + " are not read (the launcher's own flags give the processes)");
  const std::string b = Base(c[k].text);
  Launcher launcher = Launcher::kNone;
  size_t from = k + 1, script = c.size();
  bool module = false;
  if (b == "torchrun") launcher = Launcher::kTorchrun;
  else if (b == "deepspeed") launcher = Launcher::kDeepspeed;
  else if (b == "accelerate") {
    if (k + 1 >= c.size() || c[k + 1].text != "launch") return false;
    launcher = Launcher::kAccelerate;
    from = k + 2;
  } else if (!EndsWith(b, ".py")) {  // python [-u ...] (-m module | script.py)
    size_t j = k + 1;
    while (j < c.size() && c[j].text.rfind("-", 0) == 0 && c[j].text != "-m") ++j;
    if (j >= c.size()) return false;
    if (c[j].text == "-m") {
      if (j + 1 >= c.size()) return false;
      const std::string mod = c[j + 1].text;
      from = j + 2;
      if (mod == "torch.distributed.run" || mod == "torch.distributed.launch") launcher = Launcher::kTorchrun;
      else if (mod == "deepspeed.launcher.runner") launcher = Launcher::kDeepspeed;
      else if (mod == "accelerate.commands.launch") launcher = Launcher::kAccelerate;
      else script = j + 1, module = true;
    } else {
      script = j;
    }
  } else {
    script = k;
  }
  if (launcher != Launcher::kNone) {
    std::vector<LaunchFlag> flags, unknown;
    if (launcher == Launcher::kTorchrun) {
      script = ScanLauncher(c, from, TorchrunValued(), TorchrunSwitches(), flags, unknown, module);
      GPUPLAN_RETURN_IF_ERROR(Torchrun(im, flags, unknown, file));
    } else if (launcher == Launcher::kDeepspeed) {
      script = ScanLauncher(c, from, DeepspeedValued(), DeepspeedSwitches(), flags, unknown, module);
      GPUPLAN_RETURN_IF_ERROR(DeepspeedLauncher(im, flags, unknown, file));
    } else {
      script = ScanLauncher(c, from, AccelerateLaunchValued(), AccelerateLaunchSwitches(), flags, unknown, module);
      GPUPLAN_RETURN_IF_ERROR(AccelerateLaunch(im, flags, unknown, file, depth));
    }
  }
  if (script >= c.size()) {
    im.Note({file, c[k].line, b}, "no training script after the launcher");
    return true;
  }
  GPUPLAN_RETURN_IF_ERROR(ScriptArgs(im, c[script].text, module, c, script + 1, file, depth));
  return true;
}

Status Importer::ReadShell(const std::string& text, const std::string& file, ImportKind kind, int depth) {
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(text, file));
  ShellState st;
  ShellReader reader(text, file, st, depth, true);
  std::vector<Command> commands;
  GPUPLAN_RETURN_IF_ERROR(reader.Read(commands));
  for (const auto& [w, m] : reader.notes) Note(w, m);
  bool any = false;
  for (const auto& c : commands) {
    auto used = ParseCommand(*this, c, file, depth);
    if (!used.ok()) return used.status();
    any |= *used;
  }
  if (any) return Status::Ok();
  // No command: a file of flags (Megatron arguments one per line, or MEGATRON_ARGS=( ... ) to source).
  Command words;
  for (const auto& name : st.array_order) words.insert(words.end(), st.arrays[name].begin(), st.arrays[name].end());
  for (const auto& c : commands)
    if (!c.empty() && c[0].text.rfind("--", 0) == 0) words.insert(words.end(), c.begin(), c.end());
  if (words.empty())
    return Bad({file, 1, ""}, "no launch command (torchrun, deepspeed, accelerate launch, python ...py) and no flags found");
  return ScriptArgs(*this, kind == ImportKind::kMegatronArgs ? "pretrain_gpt.py" : "", false, words, 0, file, depth);
}


}  // namespace gpuplan::import_detail
